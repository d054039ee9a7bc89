/**
 * A slice of a `minimr sweep` as a map of a minimr job (`minimr sweep --cluster URL`): each map runs
 * the sweep units of its split (src/experiments/sweep.ts) one after another and emits each result as
 * `key<TAB>JSON`, so a sweep outgrows one machine on the engine itself. The simulator travels inside
 * this module's bundle; a unit's figures depend on its key alone, wherever it runs.
 *
 * params: `spec` (the SweepSpec), `slices` (the units of each map).
 */
import { defineJob, generatedInput, textOutput, type JsonValue } from 'minimr';
import { runSweepUnit, type SweepSpec, type SweepUnit } from '../src/experiments/sweep.js';

export default defineJob({
  name: 'sweep-slice',
  input: generatedInput((params) => params.slices as JsonValue[]),
  output: textOutput(),
  reducers: 0,
  async map(_index, slice, ctx) {
    const spec = ctx.params.spec as unknown as SweepSpec;
    for (const unit of slice as unknown as SweepUnit[]) {
      const result = await runSweepUnit(spec, unit);
      ctx.emit(unit.key, JSON.stringify(result));
    }
  },
});

/**
 * A worker thread of `minimr sweep` (sweep-runner.ts): runs the units it is sent, one at a time,
 * and posts each result back. The sweep's spec comes once, as the thread's workerData.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { serializeError } from '../errors.js';
import { checkSweepSpec, runSweepUnit, type SweepSpec, type SweepUnit } from './sweep.js';

const spec = workerData as SweepSpec;
// The sweep's plug-ins, loaded in this thread (the main thread's registry is not shared).
const ready = checkSweepSpec(spec);
parentPort!.on('message', (unit: SweepUnit) => {
  ready
    .then(() => runSweepUnit(spec, unit))
    .then(
      (result) => parentPort!.postMessage({ result }),
      (err: unknown) => parentPort!.postMessage({ key: unit.key, error: serializeError(err) }),
    );
});

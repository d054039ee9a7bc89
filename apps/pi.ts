/**
 * Pi by quasi-Monte Carlo, as Hadoop's QuasiMonteCarlo example: map i takes `samples` points of the
 * 2-D Halton sequence (bases 2 and 3) starting after index i*samples, and counts how many fall
 * inside the circle inscribed in the unit square (area pi/4, the same ratio as a quarter circle of
 * radius 1). The single reducer adds the counts up.
 *
 *   --param maps=<map tasks>         required
 *   --param samples=<points per map> required
 *
 * Output, three lines:  pi<TAB><4*inside/total>,  inside<TAB><count>,  total<TAB><count>
 */
import { codecs, defineJob, generatedInput, textOutput, type JsonValue, type ReduceContext } from 'minimr';

type Params = Readonly<Record<string, JsonValue>>;

function intParam(params: Params, name: string, min: number): number {
  const v = params[name];
  if (v === undefined || v === null)
    throw new Error(`pi: missing parameter \`${name}\` (give it with --param ${name}=...)`);
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw new Error(`pi: parameter \`${name}\` must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  }
  return n;
}

// A type alias (not an interface) so that it is assignable to JsonValue.
export type PiSplit = { offset: number; samples: number };

export function piSplits(params: Params): PiSplit[] {
  const maps = intParam(params, 'maps', 1);
  const samples = intParam(params, 'samples', 1);
  if (!Number.isSafeInteger(maps * samples)) throw new Error('pi: maps * samples must stay below 2^53');
  return Array.from({ length: maps }, (_, i) => ({ offset: i * samples, samples }));
}

const BASES = [2, 3];
// Digits kept per base, as Hadoop: enough that every index below 2^53 is represented exactly.
const DIGITS = [63, 40];

/**
 * Hadoop's incremental Halton generator: after the first point, each next one is an add-with-carry
 * on the index's base-b digits, amortised O(1) instead of O(log index) per coordinate.
 */
export class HaltonSequence {
  private readonly x: number[] = [];
  private readonly q: number[][] = [];
  private readonly d: number[][] = [];

  constructor(startIndex: number) {
    for (let i = 0; i < BASES.length; i++) {
      const base = BASES[i]!;
      const q: number[] = [];
      const d: number[] = [];
      let k = startIndex;
      let x = 0;
      for (let j = 0; j < DIGITS[i]!; j++) {
        q[j] = (j === 0 ? 1 : q[j - 1]!) / base;
        d[j] = k % base;
        k = (k - d[j]!) / base;
        x += d[j]! * q[j]!;
      }
      this.q.push(q);
      this.d.push(d);
      this.x.push(x);
    }
  }

  /** Advances to the next index and returns its point; the array is reused between calls. */
  nextPoint(): readonly number[] {
    for (let i = 0; i < BASES.length; i++) {
      const base = BASES[i]!;
      const q = this.q[i]!;
      const d = this.d[i]!;
      for (let j = 0; j < DIGITS[i]!; j++) {
        d[j]!++;
        this.x[i]! += q[j]!;
        if (d[j]! < base) break;
        d[j] = 0;
        this.x[i]! -= j === 0 ? 1 : q[j - 1]!;
      }
    }
    return this.x;
  }
}

export function countInside(offset: number, samples: number): { inside: number; outside: number } {
  const halton = new HaltonSequence(offset);
  let inside = 0;
  for (let n = 0; n < samples; n++) {
    const p = halton.nextPoint();
    const x = p[0]! - 0.5;
    const y = p[1]! - 0.5;
    if (x * x + y * y <= 0.25) inside++;
  }
  return { inside, outside: samples - inside };
}

function parseSplit(value: JsonValue): PiSplit {
  const v = value as { offset?: unknown; samples?: unknown } | null;
  if (v === null || typeof v !== 'object' || !Number.isSafeInteger(v.offset) || !Number.isSafeInteger(v.samples)) {
    throw new Error(`pi: a split must be { offset, samples } with integers, got ${JSON.stringify(value)}`);
  }
  return { offset: v.offset as number, samples: v.samples as number };
}

function add(counts: Iterable<[number, number]>): [number, number] {
  let inside = 0;
  let outside = 0;
  for (const [i, o] of counts) {
    inside += i;
    outside += o;
  }
  return [inside, outside];
}

export default defineJob({
  name: 'pi',
  input: generatedInput(piSplits),
  output: textOutput(),
  reducers: 1,
  mapKey: codecs.text,
  mapValue: codecs.msgpack<[number, number]>(),
  map(_index, value, ctx) {
    const { offset, samples } = parseSplit(value);
    const { inside, outside } = countInside(offset, samples);
    // One key holding both counts (not Hadoop's true/false keys): the reducer then sees everything
    // in one call and computes pi there, where Hadoop's needs its reducer's cleanup. The end-of-task
    // hooks would add nothing: a map reads exactly one generated record, so emitting here already
    // makes one record per map.
    ctx.emit('points', [inside, outside]);
  },
  combine(key, counts, ctx) {
    ctx.emit(key, add(counts));
  },
  reduce(_key, counts, ctx: ReduceContext<string, number>) {
    const [inside, outside] = add(counts);
    const total = inside + outside;
    ctx.emit('pi', (4 * inside) / total);
    ctx.emit('inside', inside);
    ctx.emit('total', total);
  },
});

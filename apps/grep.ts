/**
 * GrepCount, as Hadoop's Grep example reduced to one pattern: counts the input lines that match a
 * JavaScript regular expression.
 *
 *   --param pattern=<RegExp source>   required
 *   --param flags=<RegExp flags>      optional, e.g. `i`; `g` and `y` are ignored (see below)
 *
 * Output: a single line `<pattern><TAB><matching lines>`, e.g. `licen[cs]e\t412`. The count is 0
 * (not a missing line) when nothing matches: every map emits its count, 0 included, from cleanupMap.
 * The one exception is input with no bytes at all (only empty files, or none): it has no splits, so
 * no map runs and the output is empty.
 *
 * Each map counts its matches in module scope (every attempt runs in a process of its own) and emits
 * one (pattern, count) at the end, so a map's output is one record however many lines match. The
 * combiner stays: with one record per map it costs next to nothing, and it keeps the map output at
 * one record per map should map ever emit per line again.
 */
import { codecs, defineJob, textInput, textOutput, type JsonValue } from 'minimr';

type Params = Readonly<Record<string, JsonValue>>;

function stringParam(params: Params, name: string, required: boolean): string | undefined {
  const v = params[name];
  if (v === undefined || v === null) {
    if (required) throw new Error(`grep: missing parameter \`${name}\` (give it with --param ${name}=...)`);
    return undefined;
  }
  if (typeof v !== 'string' && typeof v !== 'number') {
    throw new Error(`grep: parameter \`${name}\` must be a string, got ${JSON.stringify(v)}`);
  }
  return String(v);
}

let cached: { pattern: string; flags: string; re: RegExp } | undefined;

/**
 * Compiled once per task, not per line. `g` and `y` are dropped because they make `test` resume
 * from `lastIndex`, so a line could be judged by where the previous line's match ended.
 */
export function compilePattern(params: Params): { pattern: string; re: RegExp } {
  const pattern = stringParam(params, 'pattern', true) as string;
  const flags = (stringParam(params, 'flags', false) ?? '').replace(/[gy]/g, '');
  if (cached === undefined || cached.pattern !== pattern || cached.flags !== flags) {
    let re: RegExp;
    try {
      re = new RegExp(pattern, flags);
    } catch (err) {
      throw new Error(`grep: invalid regular expression /${pattern}/${flags}: ${(err as Error).message}`);
    }
    cached = { pattern, flags, re };
  }
  return cached;
}

function sum(values: Iterable<number>): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

/** Matching lines counted so far by the current attempt. */
let counted: { attemptId: string; matches: number } | undefined;

export default defineJob({
  name: 'grep',
  input: textInput(),
  output: textOutput(),
  reducers: 1,
  mapKey: codecs.text,
  mapValue: codecs.msgpack<number>(),
  map(_offset, line, ctx) {
    const { re } = compilePattern(ctx.params);
    // Keyed by attempt so that a count left behind by an attempt that never reached cleanupMap (in
    // a process that runs several, e.g. a test harness) does not leak into the next one.
    if (counted === undefined || counted.attemptId !== ctx.attemptId) counted = { attemptId: ctx.attemptId, matches: 0 };
    if (re.test(line)) counted.matches++;
  },
  cleanupMap(ctx) {
    // Compiled here too, so a bad pattern fails even a map whose split holds no line.
    const { pattern } = compilePattern(ctx.params);
    const matches = counted !== undefined && counted.attemptId === ctx.attemptId ? counted.matches : 0;
    counted = undefined;
    // Emitted when 0 as well, so that the reducer runs and prints `pattern\t0`.
    ctx.emit(pattern, matches);
  },
  combine(pattern, counts, ctx) {
    ctx.emit(pattern, sum(counts));
  },
  reduce(pattern, counts, ctx) {
    ctx.emit(pattern, sum(counts));
  },
});

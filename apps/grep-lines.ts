/**
 * Grep that outputs the matching lines themselves, in input order within each map's part file
 * (map-only: part i holds the matches of input split i).
 *
 *   --param pattern=<RegExp source>   required
 *   --param flags=<RegExp flags>      optional, e.g. `i`; `g` and `y` are ignored
 *
 * Output: each matching line exactly as read (without its newline). The line is emitted as the key
 * with an empty value, and the text output's separator is empty, so `key + separator + value` is the
 * line itself rather than `line<TAB>`.
 */
import { codecs, defineJob, textInput, textOutput, type JsonValue } from 'minimr';

type Params = Readonly<Record<string, JsonValue>>;

function stringParam(params: Params, name: string, required: boolean): string | undefined {
  const v = params[name];
  if (v === undefined || v === null) {
    if (required) throw new Error(`grep-lines: missing parameter \`${name}\` (give it with --param ${name}=...)`);
    return undefined;
  }
  if (typeof v !== 'string' && typeof v !== 'number') {
    throw new Error(`grep-lines: parameter \`${name}\` must be a string, got ${JSON.stringify(v)}`);
  }
  return String(v);
}

let cached: { pattern: string; flags: string; re: RegExp } | undefined;

/** Compiled once per task; `g`/`y` dropped because they make `test` stateful across lines. */
export function compilePattern(params: Params): RegExp {
  const pattern = stringParam(params, 'pattern', true) as string;
  const flags = (stringParam(params, 'flags', false) ?? '').replace(/[gy]/g, '');
  if (cached === undefined || cached.pattern !== pattern || cached.flags !== flags) {
    let re: RegExp;
    try {
      re = new RegExp(pattern, flags);
    } catch (err) {
      throw new Error(`grep-lines: invalid regular expression /${pattern}/${flags}: ${(err as Error).message}`);
    }
    cached = { pattern, flags, re };
  }
  return cached.re;
}

export default defineJob({
  name: 'grep-lines',
  input: textInput(),
  output: textOutput(''),
  reducers: 0,
  mapKey: codecs.text,
  mapValue: codecs.text,
  map(_offset, line, ctx) {
    if (compilePattern(ctx.params).test(line)) ctx.emit(line, '');
  },
});

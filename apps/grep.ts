/**
 * GrepCount, as Hadoop's Grep example reduced to one pattern: counts the input lines that match a
 * JavaScript regular expression.
 *
 *   --param pattern=<RegExp source>   required
 *   --param flags=<RegExp flags>      optional, e.g. `i`; `g` and `y` are ignored (see below)
 *
 * Output: a single line `<pattern><TAB><matching lines>`, e.g. `licen[cs]e\t412`. The count is 0
 * (not a missing line) when nothing matches: every map emits its count, 0 included. The one
 * exception is input with no bytes at all (only empty files, or none): it has no splits, so no map
 * runs and the output is empty.
 *
 * Each map reads its whole split as chunks of whole lines (`mapSplit`) and emits one (pattern,
 * count) at the end; the combiner stays, at one record per map it costs next to nothing. A line
 * matches when `RegExp.test` on it (without its `\n` and a CRLF line's `\r`) is true, as if each line
 * were tested alone; the scan finds those lines without a string per line:
 *
 * - A pattern without regular expression syntax and without the `i` flag is a literal: its UTF-8
 *   bytes are searched in the chunk with `Buffer.indexOf` (a match in the bytes is a match in the
 *   decoded text: UTF-8 is self-synchronizing), and each hit counts its line and skips to the next.
 *   An alternation of a few such literals (`foo|bar`, as GNU grep's keyword matcher) is searched the
 *   same way, each literal's next hit kept until the scan passes it: a line matches when one of the
 *   alternatives occurs in it, and decoding the chunk for the regex engine costs more than a few
 *   byte searches.
 * - Otherwise the chunk is decoded once and one global, multiline copy of the regex runs over it.
 *   Without lookarounds, every match the line alone has is also found in the chunk from the line's
 *   start (line edges look alike: `^`/`$` in multiline mode, `\b` next to `\n` or `\r`); a match may
 *   also cross into the next line, or see a `\r` as a line end, so each line holding the start of a
 *   match is tested alone before it counts, and the scan goes on at the next line. A pattern with a
 *   lookaround can see past a line's end, so it is tested line by line.
 */
import { isAscii } from 'node:buffer';
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

/** Counts the lines of a chunk of whole lines that match. */
export interface LineMatcher {
  readonly pattern: string;
  countMatchingLines(bytes: Buffer): number;
}

const NEWLINE = 0x0a;
const REGEX_SYNTAX = /[\\^$.|?*+()[\]{}]/;
const LOOKAROUND = /\(\?<?[=!]/;

let cached: { pattern: string; flags: string; matcher: LineMatcher } | undefined;

/**
 * Compiled once per task, not per chunk. `g` and `y` are dropped because they make `test` resume
 * from `lastIndex`, so a line could be judged by where the previous line's match ended.
 */
export function compileMatcher(params: Params): LineMatcher {
  const pattern = stringParam(params, 'pattern', true) as string;
  const flags = (stringParam(params, 'flags', false) ?? '').replace(/[gy]/g, '');
  if (cached === undefined || cached.pattern !== pattern || cached.flags !== flags) {
    let re: RegExp;
    try {
      re = new RegExp(pattern, flags);
    } catch (err) {
      throw new Error(`grep: invalid regular expression /${pattern}/${flags}: ${(err as Error).message}`);
    }
    const alternatives = pattern.split('|');
    const literals = !flags.includes('i') && alternatives.length <= MAX_LITERALS && alternatives.every(isLiteral);
    const count = literals
      ? literalCounter(alternatives.map((literal) => Buffer.from(literal, 'utf8')))
      : LOOKAROUND.test(pattern)
        ? lineByLineCounter(re)
        : chunkRegexCounter(re, new RegExp(pattern, flags.includes('m') ? `${flags}g` : `${flags}gm`));
    cached = { pattern, flags, matcher: { pattern, countMatchingLines: count } };
  }
  return cached.matcher;
}

/**
 * Text that means itself in a regex. Not one either: what no line holds (\n), or what bytes and
 * decoded text disagree on (U+FFFD stands for invalid bytes; a lone surrogate is never decoded).
 */
function isLiteral(text: string): boolean {
  return (
    text.length > 0 &&
    !REGEX_SYNTAX.test(text) &&
    !/[\r\n\u2028\u2029\ufffd]/.test(text) &&
    Buffer.from(text, 'utf8').toString('utf8') === text
  );
}

/**
 * Each chunk is searched once per literal, so a long alternation goes to the one regex pass instead
 * (the limit is a guess, not measured).
 */
const MAX_LITERALS = 4;

/** Lines holding any of `needles`. */
function literalCounter(needles: readonly Buffer[]): (bytes: Buffer) => number {
  return (bytes) => {
    // Each needle's first hit at or after the scan's position (-1: none left in the chunk).
    const next = needles.map((needle) => bytes.indexOf(needle));
    let n = 0;
    for (;;) {
      let hit = -1;
      for (const h of next) if (h >= 0 && (hit < 0 || h < hit)) hit = h;
      if (hit < 0) return n;
      n++;
      const end = bytes.indexOf(NEWLINE, hit);
      if (end < 0) return n;
      for (let i = 0; i < needles.length; i++)
        if (next[i]! >= 0 && next[i]! <= end) next[i] = bytes.indexOf(needles[i]!, end + 1);
    }
  };
}

/** The chunk as text: an ASCII chunk (the common case) is copied as Latin-1, faster than decoding UTF-8. */
function decode(bytes: Buffer): string {
  return isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
}

/** A line of `text` without its `\n` and a trailing `\r`. */
function lineAt(text: string, start: number, end: number): string {
  return text.charCodeAt(end - 1) === 0x0d && end > start ? text.slice(start, end - 1) : text.slice(start, end);
}

function chunkRegexCounter(re: RegExp, global: RegExp): (bytes: Buffer) => number {
  return (bytes) => {
    const text = decode(bytes);
    if (text.length === 0) return 0;
    // After a final newline there is no line (the chunk's lines all end in one, but a file's last).
    const end = text.length > 0 && text.charCodeAt(text.length - 1) === NEWLINE ? text.length - 1 : text.length;
    let n = 0;
    global.lastIndex = 0;
    for (let m = global.exec(text); m !== null && m.index <= end; m = global.exec(text)) {
      const lineStart = m.index === 0 ? 0 : text.lastIndexOf('\n', m.index - 1) + 1;
      let lineEnd = text.indexOf('\n', m.index);
      if (lineEnd < 0) lineEnd = text.length;
      if (re.test(lineAt(text, lineStart, lineEnd))) n++;
      if (lineEnd >= end) break;
      global.lastIndex = lineEnd + 1;
    }
    return n;
  };
}

function lineByLineCounter(re: RegExp): (bytes: Buffer) => number {
  return (bytes) => {
    const text = decode(bytes);
    let n = 0;
    for (let start = 0; start < text.length; ) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      if (re.test(lineAt(text, start, end))) n++;
      start = end + 1;
    }
    return n;
  };
}

function sum(values: Iterable<number>): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

export default defineJob({
  name: 'grep',
  input: textInput(),
  output: textOutput(),
  reducers: 1,
  mapKey: codecs.text,
  mapValue: codecs.varuint,
  async mapSplit(input, ctx) {
    // Compiled before reading, so a bad pattern fails even a map whose split holds no line.
    const matcher = compileMatcher(ctx.params);
    let matches = 0;
    // Nothing of a chunk is kept once counted: the reader may read the next one into the same memory.
    for await (const chunk of input.chunks({ reuseBuffers: true })) matches += matcher.countMatchingLines(chunk.bytes);
    // Emitted when 0 as well, so that the reducer runs and prints `pattern\t0`.
    ctx.emit(matcher.pattern, matches);
  },
  combine(pattern, counts, ctx) {
    ctx.emit(pattern, sum(counts));
  },
  reduce(pattern, counts, ctx) {
    ctx.emit(pattern, sum(counts));
  },
});

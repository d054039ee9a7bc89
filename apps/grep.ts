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
    const must = literals ? undefined : requiredLiteral(pattern, flags);
    const count = literals
      ? literalCounter(alternatives.map((literal) => Buffer.from(literal, 'utf8')))
      : must !== undefined
        ? prefilteredCounter(Buffer.from(must, 'utf8'), re)
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

/**
 * The longest literal every match of `pattern` contains (GNU grep's "must" string), if one of at
 * least MIN_MUST_LENGTH characters is found: a run of plain characters in the pattern's top-level
 * concatenation. The walk is conservative: a top-level `|` gives none; groups, classes, escapes,
 * `.`, anchors and quantifiers end a run, and a quantifier also takes the character it repeats off
 * the run (`ab*c` requires neither `ab` nor `bc`). With `i` (case) or `v` (nested classes) there is none.
 */
export function requiredLiteral(pattern: string, flags: string): string | undefined {
  if (flags.includes('i') || flags.includes('v')) return undefined;
  const runs: string[] = [];
  let run = '';
  const endRun = () => {
    if (run.length > 0) runs.push(run);
    run = '';
  };
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i]!;
    if (c === '|') return undefined;
    if (c === '\\') {
      endRun();
      i = afterEscape(pattern, i);
    } else if (c === '[') {
      endRun();
      i = afterClass(pattern, i);
    } else if (c === '(') {
      endRun();
      i = afterGroup(pattern, i);
      if (i < 0) return undefined;
    } else if (c === '*' || c === '+' || c === '?' || c === '{') {
      // The quantified atom was the run's last character (or ended the run already).
      run = run.slice(0, -1);
      endRun();
      i += c === '{' ? (BRACE_QUANTIFIER.exec(pattern.slice(i))?.[0].length ?? 1) : 1;
    } else if (c === '.' || c === '^' || c === '$' || c === ')' || c === ']' || c === '}') {
      endRun();
      i++;
    } else {
      run += c;
      i++;
    }
  }
  endRun();
  const best = runs.filter(isLiteral).reduce((a, b) => (b.length > a.length ? b : a), '');
  return best.length >= MIN_MUST_LENGTH ? best : undefined;
}

/** Shorter musts hit too many lines to pay for the per-hit line test (a guess, not measured). */
const MIN_MUST_LENGTH = 2;

const BRACE_QUANTIFIER = /^\{\d+(,\d*)?\}/;

/**
 * The index after the escape at `at`: `\xHH`, `\uHHHH`, `\u{...}`, `\cX`, `\p{...}`, `\k<...>` and a
 * back-reference's or octal escape's digits are one escape with what follows.
 */
function afterEscape(pattern: string, at: number): number {
  const c = pattern[at + 1];
  const from = at + 2;
  const close = (end: string) => {
    const j = pattern.indexOf(end, from);
    return j < 0 ? pattern.length : j + 1;
  };
  if (c === undefined) return from;
  if (c === 'x') return from + 2;
  if (c === 'u') return pattern[from] === '{' ? close('}') : from + 4;
  if (c === 'c') return from + 1;
  if ((c === 'p' || c === 'P') && pattern[from] === '{') return close('}');
  if (c === 'k' && pattern[from] === '<') return close('>');
  if (c >= '0' && c <= '9') {
    let i = from;
    while (i < pattern.length && pattern[i]! >= '0' && pattern[i]! <= '9') i++;
    return i;
  }
  return from;
}

/** The index after the character class opening at `open` (escapes inside skipped). */
function afterClass(pattern: string, open: number): number {
  let i = open + 1;
  while (i < pattern.length && pattern[i] !== ']') i = pattern[i] === '\\' ? afterEscape(pattern, i) : i + 1;
  return i + 1;
}

/** The index after the group opening at `open`; -1 when it does not close. */
function afterGroup(pattern: string, open: number): number {
  let depth = 0;
  for (let i = open; i < pattern.length; ) {
    const c = pattern[i]!;
    if (c === '\\') i = afterEscape(pattern, i);
    else if (c === '[') i = afterClass(pattern, i);
    else {
      if (c === '(') depth++;
      else if (c === ')' && --depth === 0) return i + 1;
      i++;
    }
  }
  return -1;
}

/**
 * Lines holding `must` that `re` matches: the bytes are searched for `must` (as literalCounter
 * does), and only the lines it is in are decoded and tested. A must that is rare makes a regex
 * search as fast as a literal one, which is how GNU grep searches too.
 */
function prefilteredCounter(must: Buffer, re: RegExp): (bytes: Buffer) => number {
  return (bytes) => {
    let n = 0;
    for (let hit = bytes.indexOf(must); hit >= 0; ) {
      const start = bytes.lastIndexOf(NEWLINE, hit) + 1;
      let end = bytes.indexOf(NEWLINE, hit);
      if (end < 0) end = bytes.length;
      const lineEnd = end > start && bytes[end - 1] === CARRIAGE_RETURN ? end - 1 : end;
      if (re.test(bytes.toString('utf8', start, lineEnd))) n++;
      if (end >= bytes.length) break;
      hit = bytes.indexOf(must, end + 1);
    }
    return n;
  };
}

const CARRIAGE_RETURN = 0x0d;

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

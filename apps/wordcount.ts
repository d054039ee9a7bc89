/**
 * WordCount, as Hadoop's example: a word is a maximal run of characters other than the five
 * delimiters of java.util.StringTokenizer's default (space, tab, newline, carriage return, form
 * feed); case is kept. Output: one line `word<TAB>count` per distinct word, sorted by the word's
 * UTF-8 bytes within each reducer's part file.
 */
import { codecs, defineJob, textInput, textOutput } from 'minimr';

const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const FF = 0x0c;

/**
 * Calls `onWord` for every token of `line`. A charCode loop plus `slice` beats `split(/\s+/)`:
 * no regex engine, no intermediate array, no empty strings to filter, and V8's slices share the
 * line's storage. Vertical tab and Unicode spaces are deliberately NOT delimiters, to match Java.
 */
export function forEachWord(line: string, onWord: (word: string) => void): void {
  const n = line.length;
  let start = -1;
  for (let i = 0; i < n; i++) {
    const c = line.charCodeAt(i);
    if (c === SPACE || c === TAB || c === LF || c === CR || c === FF) {
      if (start >= 0) {
        onWord(line.slice(start, i));
        start = -1;
      }
    } else if (start < 0) {
      start = i;
    }
  }
  if (start >= 0) onWord(line.slice(start));
}

function sum(values: Iterable<number>): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

export default defineJob({
  name: 'wordcount',
  input: textInput(),
  output: textOutput(),
  mapKey: codecs.text,
  // msgpack stores 1 as a single byte, which keeps un-combined map output small.
  mapValue: codecs.msgpack<number>(),
  map(_offset, line, ctx) {
    forEachWord(line, (word) => ctx.emit(word, 1));
  },
  combine(word, counts, ctx) {
    ctx.emit(word, sum(counts));
  },
  reduce(word, counts, ctx) {
    ctx.emit(word, sum(counts));
  },
});

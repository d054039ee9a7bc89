/**
 * A deterministic synthetic text corpus for WordCount and Grep: words drawn from a Zipf (s = 1)
 * distribution over a vocabulary of made-up lowercase words (a few thousand by default; the "zipf"
 * corpus of bench:apps has a million, where map-side combining helps less), lines of 60..100
 * characters, words separated by one space (one separator in 64 is a tab instead, so that the
 * tab delimiter is exercised; every tokenizer compared here splits on both). The generator counts
 * what it writes, which gives an independent reference for both jobs' outputs.
 */
import { open } from 'node:fs/promises';
import { seededUint32 } from '../../src/util/index.js';

export interface CorpusOptions {
  seed?: number;
  vocabularySize?: number;
  /** Fraction of lines the grep word should occur in (it is picked to come close). */
  grepLineFraction?: number;
  /** Pick grep words (the search is quadratic in the vocabulary: off for huge ones). Default true. */
  grep?: boolean;
}

/** Lines that hold any of some words, as counted by the generator. */
export interface GrepCase {
  /** The pattern, the same for minimr's RegExp and the peer: a word, or words joined by `|`. */
  pattern: string;
  words: string[];
  lines: number;
}

export interface CorpusInfo {
  path: string;
  bytes: number;
  lines: number;
  words: number;
  vocabulary: string[];
  /** Occurrences of vocabulary[i], as written. */
  counts: number[];
  /**
   * Grep cases: a literal (one word) and a regex (two other words, `a|b`), each word in about half
   * a percent to one percent of the lines; absent without `grep`. Lines that contain a word as a
   * substring contain it as a word: see pickGrepWord.
   */
  grep?: { literal: GrepCase; regex: GrepCase };
}

/** bench:apps' corpora (bench:tera-phases uses them too). */
export const CORPORA = ['standard', 'zipf'] as const;
export type CorpusName = (typeof CORPORA)[number];
/** The corpora's generator settings: the standard one is the generator's default. */
export const CORPUS_OPTIONS: Record<CorpusName, CorpusOptions> = {
  standard: {},
  zipf: { seed: 20260116, vocabularySize: 1_000_000, grep: false },
};

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';
const TABLE_BITS = 20;

/** Distinct words; frequent ranks get shorter words, as in natural text. */
export function makeVocabulary(size: number, rng: () => number): string[] {
  const seen = new Set<string>();
  const words: string[] = [];
  while (words.length < size) {
    const rank = words.length + 1;
    const len = Math.min(12, 2 + Math.floor(Math.log2(rank + 1) * 0.6) + (rng() % 3));
    let w = '';
    for (let i = 0; i < len; i++) w += LETTERS[rng() % 26];
    if (!seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  }
  return words;
}

/** Zipf(s = 1) probabilities of ranks 1..n. */
export function zipfProbabilities(n: number): number[] {
  let h = 0;
  for (let r = 1; r <= n; r++) h += 1 / r;
  return Array.from({ length: n }, (_, i) => 1 / (i + 1) / h);
}

/**
 * Inverse-CDF lookup table: a uniform 20-bit number indexes the word. Quantizing to 2^-20 moves
 * each probability by under 1e-6, and every word of a few-thousand vocabulary keeps entries.
 */
function samplingTable(probabilities: number[]): Uint16Array {
  const size = 1 << TABLE_BITS;
  const table = new Uint16Array(size);
  let cumulative = 0;
  let at = 0;
  for (let i = 0; i < probabilities.length; i++) {
    cumulative += probabilities[i]!;
    const end = i === probabilities.length - 1 ? size : Math.min(size, Math.round(cumulative * size));
    table.fill(i, at, end);
    at = Math.max(at, end);
  }
  return table;
}

/**
 * Sampling for vocabularies too large for the lookup table (whose cells cannot tell apart words of
 * probability under 2^-20): a guide table (Chen and Asau) points into the cumulative distribution,
 * and a short linear search from there finds the word.
 */
function guidedSampler(probabilities: number[]): (u32: number) => number {
  const n = probabilities.length;
  const cdf = new Float64Array(n);
  let cumulative = 0;
  for (let i = 0; i < n; i++) cdf[i] = cumulative += probabilities[i]!;
  cdf[n - 1] = 1;
  const size = 1 << TABLE_BITS;
  const guide = new Uint32Array(size);
  for (let j = 0, i = 0; j < size; j++) {
    while (cdf[i]! <= j / size) i++;
    guide[j] = i;
  }
  return (u32) => {
    const x = u32 / 2 ** 32;
    let i = guide[u32 >>> (32 - TABLE_BITS)]!;
    while (cdf[i]! <= x) i++;
    return i;
  };
}

/**
 * The word whose chance of appearing in a line is closest to `fraction`, among words of 5+ letters
 * that are not part of any other vocabulary word; since words are separated by blanks, a line then
 * contains the word as a substring exactly when it contains it as a word, so `grep -c word` and a
 * RegExp test count the same lines as the generator does.
 */
export function pickGrepWord(
  vocabulary: string[],
  probabilities: number[],
  wordsPerLine: number,
  fraction: number,
  exclude: ReadonlySet<number> = new Set(),
): number {
  let best = -1;
  let bestDiff = Infinity;
  for (let i = 0; i < vocabulary.length; i++) {
    const w = vocabulary[i]!;
    if (w.length < 5 || exclude.has(i)) continue;
    const lineChance = 1 - (1 - probabilities[i]!) ** wordsPerLine;
    const diff = Math.abs(Math.log(lineChance / fraction));
    if (diff >= bestDiff) continue;
    if (vocabulary.some((o, j) => j !== i && o.includes(w))) continue;
    best = i;
    bestDiff = diff;
  }
  if (best < 0) throw new Error('no usable grep word in the vocabulary');
  return best;
}

/** Writes about `targetBytes` (never more) of corpus to `path`. */
export async function writeCorpus(path: string, targetBytes: number, options: CorpusOptions = {}): Promise<CorpusInfo> {
  const rng = seededUint32(options.seed ?? 20240601);
  const vocabulary = makeVocabulary(options.vocabularySize ?? 4000, rng);
  const probabilities = zipfProbabilities(vocabulary.length);
  const meanWordLength = probabilities.reduce((s, p, i) => s + p * vocabulary[i]!.length, 0);
  const wordsPerLine = 80 / (meanWordLength + 1);
  const fraction = options.grepLineFraction ?? 0.01;
  // Grep cases: 0 = none, 1 = the literal's word, 2 = a word of the regex.
  const grepOf = new Uint8Array(vocabulary.length);
  let grepIndex = -1;
  const regexIndexes: number[] = [];
  if (options.grep ?? true) {
    grepIndex = pickGrepWord(vocabulary, probabilities, wordsPerLine, fraction);
    const taken = new Set([grepIndex]);
    for (let k = 0; k < 2; k++) {
      const i = pickGrepWord(vocabulary, probabilities, wordsPerLine, fraction / 2, taken);
      taken.add(i);
      regexIndexes.push(i);
      grepOf[i] = 2;
    }
    grepOf[grepIndex] = 1;
  }
  // The small vocabulary keeps its original table (same corpus bytes as before); a large one needs the guide.
  const table = vocabulary.length <= 0x10000 ? samplingTable(probabilities) : undefined;
  const sample = table ? (u32: number) => table[u32 >>> (32 - TABLE_BITS)]! : guidedSampler(probabilities);
  const encoded = vocabulary.map((w) => Buffer.from(w, 'latin1'));
  const counts = new Array<number>(vocabulary.length).fill(0);

  const CHUNK = 4 << 20;
  const buf = Buffer.allocUnsafe(CHUNK + 256);
  const lineWords: number[] = [];
  const fh = await open(path, 'w');
  let pos = 0;
  let bytes = 0;
  let lines = 0;
  let words = 0;
  let grepLines = 0;
  let regexLines = 0;
  try {
    for (;;) {
      const target = 60 + (rng() % 41);
      const lineStart = pos;
      let len = 0;
      lineWords.length = 0;
      for (;;) {
        const idx = sample(rng());
        const w = encoded[idx]!;
        if (lineWords.length > 0) {
          if (len + 1 + w.length > target) break;
          buf[pos++] = rng() % 64 === 0 ? 0x09 : 0x20;
          len++;
        }
        w.copy(buf, pos);
        pos += w.length;
        len += w.length;
        lineWords.push(idx);
      }
      buf[pos++] = 0x0a;
      if (bytes + pos > targetBytes) {
        pos = lineStart; // this line would overshoot: drop it and stop
        break;
      }
      lines++;
      words += lineWords.length;
      let hasGrep = 0;
      for (const idx of lineWords) {
        counts[idx]!++;
        hasGrep |= 1 << grepOf[idx]!;
      }
      if (hasGrep & 2) grepLines++;
      if (hasGrep & 4) regexLines++;
      if (pos >= CHUNK) {
        await fh.write(buf, 0, pos);
        bytes += pos;
        pos = 0;
      }
    }
    if (pos > 0) {
      await fh.write(buf, 0, pos);
      bytes += pos;
    }
  } finally {
    await fh.close();
  }
  const info: CorpusInfo = { path, bytes, lines, words, vocabulary, counts };
  if (grepIndex >= 0) {
    const regexWords = regexIndexes.map((i) => vocabulary[i]!);
    info.grep = {
      literal: { pattern: vocabulary[grepIndex]!, words: [vocabulary[grepIndex]!], lines: grepLines },
      regex: { pattern: regexWords.join('|'), words: regexWords, lines: regexLines },
    };
  }
  return info;
}

/** The first whole lines of a corpus file's text, up to `maxBytes`. */
export function headLines(text: string, maxBytes: number): string {
  let end = 0;
  for (;;) {
    const nl = text.indexOf('\n', end);
    if (nl < 0 || nl + 1 > maxBytes) break;
    end = nl + 1;
  }
  return text.slice(0, end);
}

#!/usr/bin/env node
// Lists the lines longer than the limit (120 characters) in the source folders and exits 1 if there are any.
// Biome's formatter wraps code at 120 but leaves comments, strings, template literals and regexes as they are;
// this check covers those too (scripts/reflow-comments.mjs rewraps the comments). `npm run format:check` runs it,
// and so `pretest` does.
//
//   node scripts/check-line-length.mjs [--max N] [--quiet] [--except-literals] [PATH...]
//
// --except-literals lets a line through when it would fit without a string, template or regex literal on it (one
// the formatter cannot break): the state until those literals are split by hand. PATHs (files or folders)
// default to the folders biome.jsonc formats.
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FOLDERS, sourceFiles } from './lib/source-files.mjs';

const ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..');

function parseArgs(argv) {
  const args = { max: 120, quiet: false, exceptLiterals: false, paths: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--max') {
      args.max = Number(argv[++i]);
      if (!Number.isInteger(args.max) || args.max < 1)
        throw new Error(`--max takes a positive integer, got ${argv[i]}`);
    } else if (arg === '--quiet') {
      args.quiet = true;
    } else if (arg === '--except-literals') {
      args.exceptLiterals = true;
    } else if (arg.startsWith('--')) {
      throw new Error(`unknown option ${arg} (options: --max N, --quiet, --except-literals)`);
    } else {
      args.paths.push(arg);
    }
  }
  return args;
}

/** Width in characters (code points), as an editor's column counter shows it. */
function width(line) {
  let n = 0;
  for (const _ of line) n++;
  return n;
}

/** Lines (1-based) that would fit in `max` without the literal characters on them. */
async function literalLines(file, text, lines, max) {
  const { scan } = await import('./reflow-comments.mjs');
  const { sf, literals } = scan(file, text);
  const starts = sf.getLineStarts();
  const fitting = new Set();
  for (let n = 0; n < lines.length; n++) {
    const lineStart = starts[n];
    const lineEnd = lineStart + lines[n].length;
    let literalChars = 0;
    for (const [s, e] of literals) {
      if (e <= lineStart || s >= lineEnd) continue;
      literalChars += width(text.slice(Math.max(s, lineStart), Math.min(e, lineEnd)));
    }
    if (literalChars > 0 && width(lines[n]) - literalChars <= max) fitting.add(n + 1);
  }
  return fitting;
}

const args = parseArgs(process.argv.slice(2));
const roots = args.paths.length > 0 ? args.paths : FOLDERS.map((folder) => join(ROOT, folder));
let long = 0;
let excepted = 0;
let files = 0;
for (const root of roots) {
  for (const file of sourceFiles(root)) {
    files++;
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n');
    const longLines = [];
    for (let i = 0; i < lines.length; i++) if (width(lines[i].replace(/\r$/, '')) > args.max) longLines.push(i + 1);
    if (longLines.length === 0) continue;
    const allowed = args.exceptLiterals ? await literalLines(file, text, lines, args.max) : new Set();
    for (const n of longLines) {
      if (allowed.has(n)) {
        excepted++;
        continue;
      }
      long++;
      const w = width(lines[n - 1].replace(/\r$/, ''));
      if (!args.quiet) process.stdout.write(`${relative(process.cwd(), file)}:${n}: ${w} characters\n`);
    }
  }
}
const literalNote = args.exceptLiterals ? ` (${excepted} more let through for their literals)` : '';
if (long > 0) {
  process.stderr.write(`${long} line(s) longer than ${args.max} characters in ${files} files${literalNote}\n`);
  process.exit(1);
}
if (excepted > 0) process.stderr.write(`no line longer than ${args.max} characters${literalNote}\n`);

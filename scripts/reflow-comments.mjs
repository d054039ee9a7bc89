#!/usr/bin/env node
// Rewraps comment lines longer than the limit (120 characters), which Biome's formatter leaves as they are.
// Only comments change, found by the TypeScript parser (so nothing inside a string, template or regex is taken
// for one), and only those with a line over the limit:
// - a one-line `/** text */` or `/* text */` becomes a block, `/**`, ` * ` lines, ` */`;
// - in a block comment or a run of `//` lines, a long line's last words move to the start of the next line of
//   the same paragraph (or to a new line when the paragraph ends there), and so on down: the author's other
//   line breaks stay where they are;
// - a `//` comment after code moves to its own lines above that code, when the code alone fits.
// Lines break at spaces only, preferably outside `code spans`, and never before a word that would start a
// Markdown list item or a JSDoc tag; a word longer than a line (a URL) stays whole. Blank comment lines,
// Markdown tables, fenced and indented code, and directives (biome-ignore, @ts-expect-error, ...) are left as
// they are. Indentation and comment markers are kept; list items and tags continue with a hanging indent.
//
//   node scripts/reflow-comments.mjs [--max N] [--dry-run] [PATH...]
//
// PATHs (files or folders) default to the folders biome.jsonc formats. Run `biome format --write` after it
// (scripts/reformat.sh does both).
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { FOLDERS, sourceFiles } from './lib/source-files.mjs';

const ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..');
/** Comment texts that tools read as one line: never wrapped. */
const DIRECTIVE =
  /^(biome-ignore|@ts-|eslint-|prettier-ignore|istanbul |c8 |#|<reference|@vitest-|tslint:|jshint|global )/;
/** A word that, at the start of a line, would make it a list item, a tag, a heading, a table row or a quote. */
const MARKUP_START = /^([-+*>|]|#+|\d+[.)]|@.*)$/;
/** Text that ends a sentence: a line ending so, before one starting with a capital, is a break the author chose. */
const SENTENCE_END = /[.:;!?)\]]$/;

function parseArgs(argv) {
  const args = { max: 120, dryRun: false, paths: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--max') {
      args.max = Number(argv[++i]);
      if (!Number.isInteger(args.max) || args.max < 20)
        throw new Error(`--max takes an integer of 20 or more, got ${argv[i]}`);
    } else if (arg === '--dry-run') {
      args.dryRun = true;
    } else if (arg.startsWith('--')) {
      throw new Error(`unknown option ${arg} (options: --max N, --dry-run)`);
    } else {
      args.paths.push(arg);
    }
  }
  return args;
}

/** Width in characters (code points), as check-line-length.mjs counts it. */
function width(s) {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Every comment of the file, and the spans of its string, template and regex literals. */
export function scan(file, text) {
  const kind = /\.[cm]?ts$/.test(file) ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const comments = new Map();
  const literals = [];
  const addComments = (pos) => {
    for (const r of ts.getLeadingCommentRanges(text, pos) ?? []) comments.set(r.pos, r);
    for (const r of ts.getTrailingCommentRanges(text, pos) ?? []) comments.set(r.pos, r);
  };
  const visit = (node) => {
    // JSDoc nodes lie inside a comment: looking for comments from there would misread its text.
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    addComments(node.getFullStart());
    switch (node.kind) {
      case ts.SyntaxKind.StringLiteral:
      case ts.SyntaxKind.NoSubstitutionTemplateLiteral:
      case ts.SyntaxKind.TemplateExpression:
      case ts.SyntaxKind.RegularExpressionLiteral:
        literals.push([node.getStart(sf), node.end]);
        return;
    }
    for (const child of node.getChildren(sf)) visit(child);
  };
  visit(sf);
  return { sf, comments: [...comments.values()].sort((a, b) => a.pos - b.pos), literals };
}

/**
 * Splits `text` so that `prefix + head` fits in `max`; returns [head, rest] or null when no space allows it.
 * Never breaks before a word that would read as markup at a line's start. Prefers, in this order, the last space
 * outside `code spans` and brackets (when the head keeps at least a quarter of the room), the last outside code spans,
 * the last that fits; when even the first word is too long (a URL), breaks right after it.
 */
function splitAt(prefix, text, max) {
  const room = max - width(prefix);
  const candidates = [];
  let ticks = 0;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '`') ticks++;
    else if (ticks % 2 === 0 && '([{'.includes(c)) depth++;
    else if (ticks % 2 === 0 && ')]}'.includes(c)) depth--;
    if (c !== ' ' || i === 0 || text[i - 1] === ' ') continue;
    const head = text.slice(0, i).trimEnd();
    const rest = text.slice(i).trimStart();
    if (rest === '' || MARKUP_START.test(rest.split(' ')[0])) continue;
    const headWidth = width(head);
    candidates.push({ head, rest, headWidth, inCode: ticks % 2 === 1, inBrackets: depth > 0 });
  }
  const fitting = candidates.filter((c) => c.headWidth <= room);
  const best =
    fitting.filter((c) => !c.inCode && !c.inBrackets && c.headWidth >= room / 4).at(-1) ??
    fitting.filter((c) => !c.inCode).at(-1) ??
    fitting.at(-1) ??
    candidates[0];
  return best ? [best.head, best.rest] : null;
}

/**
 * Marks which comment lines may be wrapped. A line has a `prefix` (indentation, marker, the space after it and
 * any indent of its own) and a `text`; `startsItem` is true when it begins a paragraph, a list item or a tag
 * (nothing is pushed into it), and `hang` is what a continuation of it adds after the prefix.
 */
function classify(lines) {
  let fenced = false;
  let previous = null;
  for (const line of lines) {
    line.wrappable = false;
    line.startsItem = true;
    line.hang = '';
    line.itemHang = '';
    const text = line.text;
    if (/^\s*(```|~~~)/.test(text)) fenced = !fenced;
    else if (fenced || !line.marked || text.trim() === '' || /^\s*\|/.test(text) || DIRECTIVE.test(text.trim())) {
      // Code, a table row, a blank line or a directive: left as it is.
    } else {
      const lead = /^ */.exec(text)[0];
      const continuesItem = previous?.wrappable && previous.itemHang !== '' && lead === previous.itemHang;
      if (lead.length < 4 || continuesItem) {
        line.prefix += lead;
        line.text = text.slice(lead.length);
        line.wrappable = true;
        const item = /^([-+*]|\d+[.)]|@\S+) /.exec(line.text);
        if (item) {
          line.hang = item[1].startsWith('@') ? '  ' : ' '.repeat(item[0].length);
          line.itemHang = lead + line.hang;
        } else if (continuesItem) {
          line.startsItem = false;
          line.itemHang = previous.itemHang;
        } else {
          line.startsItem = !(previous?.wrappable && previous.prefix + previous.hang === line.prefix);
        }
      }
    }
    previous = line;
  }
}

/** Moves the overflow of each long line to the next line of its paragraph, or to a new line after it. */
function pushDown(lines, max) {
  let changed = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line.wrappable || width(line.prefix + line.text) <= max) continue;
    const split = splitAt(line.prefix, line.text, max);
    if (!split) continue;
    changed = true;
    const [head, rest] = split;
    line.text = head;
    const continuation = line.prefix + line.hang;
    const next = lines[i + 1];
    const chosenBreak = SENTENCE_END.test(rest) && /^[A-Z]/.test(next?.text ?? '');
    if (next?.wrappable && !next.startsItem && next.prefix === continuation && !next.closing && !chosenBreak) {
      next.text = `${rest} ${next.text}`;
    } else {
      lines.splice(i + 1, 0, {
        prefix: continuation,
        text: rest,
        marked: true,
        wrappable: true,
        startsItem: false,
        hang: '',
      });
    }
  }
  return changed;
}

const render = (line) => (line.prefix + line.text).trimEnd();

/** The new text of the lines from `firstLine` to `lastLine` (0-based, inclusive), or null to leave them. */
function reflowComment(comment, text, lineStarts, max) {
  const firstLine = lineOf(lineStarts, comment.pos);
  const lastLine = lineOf(lineStarts, comment.end);
  const lineText = (n) => text.slice(lineStarts[n], (lineStarts[n + 1] ?? text.length + 1) - 1).replace(/\r$/, '');
  const before = text.slice(lineStarts[firstLine], comment.pos);
  const after = lineText(lastLine).slice(comment.end - lineStarts[lastLine]);
  const body = text.slice(comment.pos, comment.end);
  const ownLine = before.trim() === '' && after.trim() === '';
  const indent = before;
  if (comment.kind === ts.SyntaxKind.MultiLineCommentTrivia) {
    if (!ownLine) return null;
    if (firstLine === lastLine) {
      const m = /^(\/\*\*?)\s*([\s\S]*?)\s*\*\/$/.exec(body);
      if (!m || m[2] === '' || DIRECTIVE.test(m[2])) return null;
      const lines = [{ prefix: `${indent} * `, text: m[2], marked: true }];
      classify(lines);
      if (!lines[0].wrappable) return null;
      pushDown(lines, max);
      return { firstLine, lastLine, text: [`${indent}${m[1]}`, ...lines.map(render), `${indent} */`] };
    }
    const lines = [];
    for (let n = firstLine; n <= lastLine; n++) {
      const raw = n === firstLine ? lineText(n).slice(indent.length) : lineText(n);
      let m;
      if (n === firstLine) {
        m = /^(\/\*\*?)( ?)(.*)$/.exec(raw);
        lines.push({ prefix: indent + m[1] + m[2], text: m[3], marked: m[3] !== '', opening: true });
      } else if ((m = /^(\s*\*)( ?)(.*)$/.exec(raw)) && !m[3].startsWith('/')) {
        lines.push({ prefix: m[1] + m[2], text: m[3], marked: true });
      } else if ((m = /^(\s*)(.*)$/.exec(raw))) {
        lines.push({ prefix: m[1], text: m[2], marked: !m[2].startsWith('*/') && m[2] !== '' });
      }
    }
    // A closing `*/` after text goes on a line of its own if that line is to be wrapped.
    const last = lines.at(-1);
    if (last.text.endsWith('*/') && last.text.trim() !== '*/' && width(render(last)) > max) {
      last.text = last.text.slice(0, -2).trimEnd();
      lines.push({ prefix: `${indent} `, text: '*/', marked: false, closing: true });
    }
    if (lines[0].opening && lines[0].text !== '' && width(render(lines[0])) > max) {
      // `/** text` that is too long: the text starts the block's first ` * ` line instead.
      lines.splice(1, 0, { prefix: `${indent} * `, text: lines[0].text, marked: true });
      lines[0].text = '';
      lines[0].marked = false;
    }
    for (const line of lines) line.closing ??= /^\*\//.test(line.text);
    classify(lines);
    if (!pushDown(lines, max)) return null;
    return { firstLine, lastLine, text: lines.map(render) };
  }
  // A `//` comment.
  if (!ownLine) {
    if (after.trim() !== '') return null;
    const code = before.trimEnd();
    if (width(code) > max) return null;
    const m = /^\/\/( ?)(.*)$/.exec(body);
    const codeIndent = /^\s*/.exec(before)[0];
    const lines = [{ prefix: `${codeIndent}//${m[1] || ' '}`, text: m[2], marked: true }];
    classify(lines);
    if (!lines[0].wrappable) return null;
    pushDown(lines, max);
    return { firstLine, lastLine, text: [...lines.map(render), code], trailing: true };
  }
  return { firstLine, lastLine, single: true };
}

function lineOf(lineStarts, pos) {
  let lo = 0;
  let hi = lineStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lineStarts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Rewraps the long comment lines of one file's text; returns the new text and how many comments changed. */
export function reflowText(file, text, max = 120) {
  const { sf, comments, literals } = scan(file, text);
  const lineStarts = sf.getLineStarts();
  const lines = text.split('\n');
  const long = (n) => width(lines[n].replace(/\r$/, '')) > max;
  const insideLiteral = (pos) => literals.some(([s, e]) => s < pos && pos < e);
  const edits = [];
  // Runs of own-line `//` comments at one indentation are wrapped together, as paragraphs.
  let run = [];
  const flushRun = () => {
    if (run.length > 0 && run.some((n) => long(n))) {
      const parsed = run.map((n) => {
        const m = /^(\s*\/\/)( ?)(.*)$/.exec(lines[n]);
        return { prefix: m[1] + m[2], text: m[3], marked: m[3] !== '' && (m[2] === ' ' || m[3].startsWith(' ')) };
      });
      classify(parsed);
      if (pushDown(parsed, max)) edits.push({ firstLine: run[0], lastLine: run.at(-1), text: parsed.map(render) });
    }
    run = [];
  };
  for (const comment of comments) {
    const spanLong = () => {
      for (let n = lineOf(lineStarts, comment.pos); n <= lineOf(lineStarts, comment.end); n++) if (long(n)) return true;
      return false;
    };
    const result = reflowComment(comment, text, lineStarts, max);
    if (result?.single) {
      const n = result.firstLine;
      const indent = /^\s*/.exec(lines[n])[0];
      const previousIndent = run.length > 0 ? /^\s*/.exec(lines[run.at(-1)])[0] : null;
      if (run.length > 0 && (run.at(-1) !== n - 1 || previousIndent !== indent)) flushRun();
      run.push(n);
      continue;
    }
    flushRun();
    if (!result || !spanLong()) continue;
    if (result.trailing && insideLiteral(lineStarts[result.firstLine])) continue;
    edits.push(result);
  }
  flushRun();
  if (edits.length === 0) return { text, changed: 0 };
  edits.sort((a, b) => b.firstLine - a.firstLine);
  for (const edit of edits) lines.splice(edit.firstLine, edit.lastLine - edit.firstLine + 1, ...edit.text);
  return { text: lines.join('\n'), changed: edits.length };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  const roots = args.paths.length > 0 ? args.paths : FOLDERS.map((folder) => join(ROOT, folder));
  let comments = 0;
  let files = 0;
  for (const root of roots) {
    for (const file of sourceFiles(root)) {
      const before = readFileSync(file, 'utf8');
      const { text, changed } = reflowText(file, before, args.max);
      if (changed === 0) continue;
      comments += changed;
      files++;
      process.stdout.write(`${relative(process.cwd(), file)}: ${changed} comment(s) rewrapped\n`);
      if (!args.dryRun) writeFileSync(file, text);
    }
  }
  process.stdout.write(`${comments} comment(s) in ${files} file(s) ${args.dryRun ? 'would be ' : ''}rewrapped\n`);
}

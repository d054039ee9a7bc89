#!/usr/bin/env node
// Shows that a reformat changed no program: every source file of AFTER parses to the same syntax tree as the
// file of the same path in BEFORE, comments and layout aside. Compared: each node's kind and each token's
// text, string literals by value (so 'it\'s' equals "it's"); not compared: comments, whitespace, semicolons,
// trailing commas, redundant parentheses and a union type's leading `|`, which are what a formatter changes.
// Exits 1, naming the first difference of each file, when a file differs.
//
//   node scripts/same-program.mjs BEFORE [AFTER]
//
// BEFORE and AFTER (default: this checkout) are directories holding the source folders biome.jsonc formats.
import { readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { FOLDERS, sourceFiles } from './lib/source-files.mjs';

/** The file's syntax tree as a list: `<Kind` and `>` around each node, the text of each token. */
function program(file, text) {
  const kind = /\.[cm]?ts$/.test(file) ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const out = [];
  const visit = (node) => {
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    if (node.kind === ts.SyntaxKind.ParenthesizedExpression) {
      visit(node.expression);
      return;
    }
    if (node.kind === ts.SyntaxKind.StringLiteral) {
      out.push(`string ${JSON.stringify(node.text)}`);
      return;
    }
    const children = node.getChildren(sf);
    if (children.length === 0) {
      if (node.kind !== ts.SyntaxKind.SyntaxList && node.kind !== ts.SyntaxKind.SemicolonToken)
        out.push(node.getText(sf));
      return;
    }
    const list = node.kind === ts.SyntaxKind.SyntaxList;
    if (!list) out.push(`<${ts.SyntaxKind[node.kind]}`);
    for (const child of children) visit(child);
    if (!list) out.push('>');
  };
  visit(sf);
  const closers = new Set([')', ']', '}', '>']);
  return out.filter((t, i) => !(t === ',' && closers.has(out[i + 1])) && !(t === '|' && out[i - 1] === '<UnionType'));
}

const [before, after = '.'] = process.argv.slice(2);
if (!before) {
  process.stderr.write('usage: node scripts/same-program.mjs BEFORE [AFTER]\n');
  process.exit(2);
}
let compared = 0;
let differing = 0;
for (const folder of FOLDERS) {
  for (const file of sourceFiles(join(after, folder))) {
    const path = relative(after, file);
    const old = statSync(join(before, path), { throwIfNoEntry: false });
    if (!old) {
      process.stdout.write(`${path}: not in ${before}\n`);
      differing++;
      continue;
    }
    compared++;
    const a = program(path, readFileSync(join(before, path), 'utf8'));
    const b = program(path, readFileSync(file, 'utf8'));
    const at = a.findIndex((t, i) => t !== b[i]);
    if (at === -1 && a.length === b.length) continue;
    differing++;
    const i = at === -1 ? Math.min(a.length, b.length) : at;
    process.stdout.write(`${path}: differs at token ${i}: ${a[i] ?? '(end)'} became ${b[i] ?? '(end)'}\n`);
  }
}
process.stdout.write(`${compared} files compared, ${differing} differ\n`);
if (differing > 0) process.exit(1);

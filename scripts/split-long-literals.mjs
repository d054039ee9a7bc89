// Splits the string and template literals that keep a line over 120 characters after the
// formatter (which never breaks a literal) into concatenations of shorter ones, cut at spaces:
// `'a long message'` becomes `('a long ' + 'message')`, a template `` `a ${x} long` `` becomes
// `` (`a ${x} ` + `long`) ``. The value is the same string: untagged templates only (a tag would see
// other parts), never an import path, a property name, a literal type or an enum member, and the
// parentheses keep the concatenation one operand wherever the literal stood. The formatter then lays
// the pieces out. Regular expressions are left as they are. Usage: node scripts/split-long-literals.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { FOLDERS, sourceFiles } from './lib/source-files.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MAX = 120;
/** Pieces are cut to about this many characters, so that they fit with their indentation. */
const PIECE = 64;

/** Whether a literal may be replaced by an expression of the same value. */
function replaceable(node) {
  const parent = node.parent;
  if (!parent) return false;
  if (ts.isTaggedTemplateExpression(parent)) return false;
  if (ts.isImportDeclaration(parent) || ts.isExportDeclaration(parent) || ts.isExternalModuleReference(parent))
    return false;
  if (ts.isLiteralTypeNode(parent)) return false;
  if (ts.isPropertyAssignment(parent) && parent.name === node) return false;
  if (
    (ts.isPropertySignature(parent) || ts.isPropertyDeclaration(parent) || ts.isMethodDeclaration(parent)) &&
    parent.name === node
  )
    return false;
  if (ts.isEnumMember(parent) || ts.isCaseClause(parent) || ts.isElementAccessExpression(parent)) return false;
  if (ts.isExpressionStatement(parent)) return false; // a directive such as 'use strict'
  if (ts.isCallExpression(parent) && parent.expression.kind === ts.SyntaxKind.ImportKeyword) return false;
  return true;
}

/** Offsets (in the file) where the literal may be cut: just after a space of its own text. */
function cutPoints(node, text) {
  const ranges = [];
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
    ranges.push([node.getStart() + 1, node.getEnd() - 1]);
  } else if (ts.isTemplateExpression(node)) {
    const head = node.head;
    ranges.push([head.getStart() + 1, head.getEnd() - 2]);
    for (const span of node.templateSpans) {
      const lit = span.literal;
      const tail = ts.isTemplateTail(lit);
      ranges.push([lit.getStart() + 1, lit.getEnd() - (tail ? 1 : 2)]);
    }
  }
  const points = [];
  for (const [from, to] of ranges) {
    for (let i = from; i < to - 1; i++) {
      // After a space that is not escaped; never at a range's edge (each piece keeps some text).
      if (text[i] === ' ' && text[i - 1] !== '\\' && i + 1 > from) points.push(i + 1);
    }
  }
  return points;
}

function split(node, text) {
  const start = node.getStart();
  const end = node.getEnd();
  const quote = text[start];
  const points = cutPoints(node, text);
  const cuts = [];
  let last = start;
  for (let k = 0; k < points.length; k++) {
    const next = points[k + 1] ?? end;
    if (next - last > PIECE && points[k] - last > 8) {
      cuts.push(points[k]);
      last = points[k];
    }
  }
  if (cuts.length === 0) return undefined;
  const pieces = [];
  let from = start;
  for (const cut of cuts) {
    pieces.push(`${text.slice(from, cut)}${quote}`);
    from = cut;
  }
  pieces.push(text.slice(from, end));
  // Every piece after the first reopens the literal with its quote.
  return `(${pieces.map((p, i) => (i === 0 ? p : `${quote}${p}`)).join(' + ')})`;
}

let changed = 0;
for (const folder of FOLDERS) {
  for (const file of sourceFiles(join(ROOT, folder))) {
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n');
    if (!lines.some((l) => [...l].length > MAX)) continue;
    const sf = ts.createSourceFile(
      file,
      text,
      ts.ScriptTarget.Latest,
      true,
      file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS,
    );
    const longLine = (pos) => [...lines[sf.getLineAndCharacterOfPosition(pos).line]].length > MAX;
    const edits = [];
    const visit = (node) => {
      const literal =
        ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node);
      if (
        literal &&
        node.getEnd() - node.getStart() > PIECE &&
        replaceable(node) &&
        (longLine(node.getStart()) || longLine(node.getEnd()))
      ) {
        const replacement = split(node, text);
        if (replacement) {
          edits.push([node.getStart(), node.getEnd(), replacement]);
          return; // a template's inner literals are its own
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
    if (edits.length === 0) continue;
    let out = text;
    for (const [from, to, replacement] of edits.sort((a, b) => b[0] - a[0]))
      out = out.slice(0, from) + replacement + out.slice(to);
    writeFileSync(file, out);
    changed += edits.length;
  }
}
process.stdout.write(`${changed} literal(s) split\n`);

/**
 * The error codes the documentation names are codes minimr has (issue 34, item 8): every `E...`
 * word in README.md, cluster/README.md and docs/*.md is a MinimrErrorCode of src/errors.ts, or one
 * of the operating system's errno names listed below; and every MinimrErrorCode survives a trip
 * across a link (deserializeError knows it), so what a server raises is what a client sees.
 * Reads files only; starts no process.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { deserializeError } from '../../src/errors.js';

/** The repository root: this file runs as dist/test/docs/error-codes.test.js. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The codes of `export type MinimrErrorCode = | 'E...' ...` in src/errors.ts. */
function minimrErrorCodes(): string[] {
  const source = readFileSync(join(ROOT, 'src', 'errors.ts'), 'utf8');
  const union = /export type MinimrErrorCode =([^;]+);/.exec(source);
  assert.ok(union, 'src/errors.ts declares MinimrErrorCode');
  return [...union[1]!.matchAll(/'(E[A-Z]+)'/g)].map((m) => m[1]!);
}

/** Errno names of the operating system that the docs may name (they are not minimr's codes). */
const OS_ERRNO = new Set(['ENOSPC', 'EDQUOT', 'EACCES', 'ECONNREFUSED', 'ECONNRESET', 'EADDRINUSE']);

function documents(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f));
  return ['README.md', join('cluster', 'README.md'), ...docs];
}

describe('error codes in the documentation', () => {
  const codes = minimrErrorCodes();

  test('src/errors.ts declares the codes', () => {
    assert.ok(codes.length > 20, codes.join(' '));
    assert.ok(codes.includes('EBADPATH') && codes.includes('EINTERNAL'));
  });

  test('every MinimrErrorCode crosses a link as itself (deserializeError knows it)', () => {
    const lost = codes.filter((code) => deserializeError({ code, message: 'm' }).code !== code);
    assert.deepEqual(lost, [], 'codes a client would see as EINTERNAL');
  });

  test('every E... code the docs name is a MinimrErrorCode or an OS errno', () => {
    const known = new Set(codes);
    const unknown: string[] = [];
    for (const file of documents()) {
      const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
      lines.forEach((line, i) => {
        for (const m of line.matchAll(/(?<![\w-])E[A-Z]{4,12}(?![\w-])/g))
          if (!known.has(m[0]) && !OS_ERRNO.has(m[0])) unknown.push(`${file}:${i + 1}: ${m[0]}`);
      });
    }
    assert.deepEqual(unknown, []);
  });
});

/**
 * A user's exception at their own files and lines (task/user-stack.ts): a fixture job bundled as on
 * submit, stored and imported as a task process does, its map made to throw; and the bound on what
 * an error's details may carry across the wire.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { MapContext } from '../../src/api/index.js';
import {
  importJobModule,
  MAX_USER_STACK_CHARS,
  readJobModuleSource,
  storeJobModule,
  userStackOf,
} from '../../src/runtime/task/index.js';
import { MAX_ERROR_DETAIL_CHARS, SerializedErrorSchema } from '../../src/runtime/wire/schema.js';

const JOBS = fileURLToPath(new URL('../../../test/fixtures/jobs/', import.meta.url));

describe("a user's stack", () => {
  const dirs: string[] = [];
  after(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('keeps only the frames of the job, at their files, lines and columns relative to the job', async () => {
    const { source } = await readJobModuleSource(join(JOBS, 'throwing-map.mjs'));
    const dir = await mkdtemp(join(tmpdir(), 'minimr-user-stack-'));
    dirs.push(dir);
    const file = await storeJobModule(source, dir);
    const job = await importJobModule(file, 'throwing-map.mjs', 'attempt_0');
    const ctx = { params: { forbidden: 'x' }, emit: () => undefined } as unknown as MapContext<unknown, unknown>;
    let thrown: unknown;
    try {
      await job.map!(0, 'a line with x', ctx);
    } catch (err) {
      thrown = err;
    }
    assert.ok(thrown instanceof Error);
    // The engine's frames (this test's, node:test's) are in the raw stack, not in the user's.
    assert.match(thrown.stack!, /user-stack\.test\.js/);
    const lines = (await readFile(join(JOBS, 'lib/checks.mjs'), 'utf8')).split('\n');
    const line = lines.findIndex((l) => l.includes('THROWS HERE'));
    const at = `lib/checks.mjs:${line + 1}:${lines[line]!.indexOf('new Error') + 1}`;
    const user = userStackOf(thrown, file);
    assert.equal(user?.at, at);
    const stack = user!.stack.split('\n');
    assert.deepEqual(stack.slice(0, 2), ['Error: line holds the forbidden word x', `    at checkLine (${at})`]);
    assert.match(stack[2]!, /^ {4}at Object\.map \(throwing-map\.mjs:\d+:\d+\)$/);
    assert.equal(stack.length, 3);
    // The same from the text, once the file is gone (a client's temporary copy).
    assert.deepEqual(userStackOf(thrown, file, source), user);
  });

  it('is nothing for an error without frames in the job, or a value that is not an Error', () => {
    assert.equal(userStackOf(new Error('engine'), '/no/such/job.mjs'), undefined);
    assert.equal(userStackOf('a string', '/no/such/job.mjs'), undefined);
  });

  it('fits in an error detail, which the wire bounds', () => {
    assert.ok(MAX_USER_STACK_CHARS <= MAX_ERROR_DETAIL_CHARS);
    const check = TypeCompiler.Compile(SerializedErrorSchema);
    const error = (stack: string) => ({ code: 'ETASK', message: 'm', details: { at: 'a.js:1:1', stack } });
    assert.ok(check.Check(error('x'.repeat(MAX_ERROR_DETAIL_CHARS))));
    assert.ok(!check.Check(error('x'.repeat(MAX_ERROR_DETAIL_CHARS + 1))));
  });
});

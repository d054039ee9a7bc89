/**
 * A policy's option declarations, as a plug-in writes them (not type-checked): a malformed one is
 * EBADCONF naming the policy and the option, not a TypeError from inside the engine.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { parseOptions, type PolicyOptions } from '../../src/scheduler/index.js';

const parse = (specs: unknown, raw: PolicyOptions = {}) =>
  parseOptions('my-policy', raw, specs as Parameters<typeof parseOptions>[2], {} as never);

function refused(pattern: RegExp) {
  return (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && pattern.test(err.message);
}

test('malformed option declarations are EBADCONF naming the policy, the option and the fix', () => {
  assert.throws(
    () => parse({ afterMs: { type: 'number', about: 'x' } }, { afterMs: 5 }),
    refused(/^scheduler policy 'my-policy': option 'afterMs' of type 'number' declares no range \(give range: \{\}/),
  );
  assert.throws(
    () => parse({ mode: { type: 'choice', about: 'x' } }),
    refused(/option 'mode' of type 'choice' declares no list/),
  );
  assert.throws(
    () => parse({ n: { type: 'integer', about: 'x' } }),
    refused(/option 'n' has type "integer"; a type is/),
  );
  assert.throws(() => parse({ n: 3 }), refused(/option 'n' is declared as no object/));
  assert.deepEqual(parse({ afterMs: { type: 'number', range: { min: 0 }, about: 'x' } }, { afterMs: 5 }), {
    afterMs: 5,
  });
});

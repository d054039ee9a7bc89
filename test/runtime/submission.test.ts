import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateSubmission } from '../../src/runtime/wire/submission.js';
import { minimalSubmission } from '../helpers/submission.js';

const base = minimalSubmission;

describe('submission: inputPlacement', () => {
  it('keeps a well-formed one and nothing else of it', () => {
    const ok = validateSubmission({ ...base, inputPlacement: { replication: 2, windowMs: 4500, extra: 1 } });
    assert.deepEqual(ok.inputPlacement, { replication: 2, windowMs: 4500 });
    assert.equal('inputPlacement' in validateSubmission(base), false);
  });

  it('refuses a malformed one with EBADJOB naming the field', () => {
    for (const bad of [
      null,
      'x',
      { replication: 0, windowMs: 1 },
      { replication: 1.5, windowMs: 1 },
      { replication: 17, windowMs: 1 },
      { replication: 2 },
      { replication: 2, windowMs: -1 },
      { replication: 2, windowMs: Infinity },
    ]) {
      assert.throws(
        () => validateSubmission({ ...base, inputPlacement: bad }),
        { code: 'EBADJOB', message: /inputPlacement/ },
        JSON.stringify(bad),
      );
    }
  });
});

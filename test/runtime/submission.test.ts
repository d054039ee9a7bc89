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

describe('submission: streaming files', () => {
  const file = (name: string, bytes = 3) => ({ name, data: new Uint8Array(bytes), executable: false });

  it('keeps plain file names with their bytes and execute bit', () => {
    const ok = validateSubmission({
      ...base,
      streaming: { files: [{ name: 'mapper.py', data: Buffer.from('x'), executable: true }, file('words.txt')] },
    });
    assert.deepEqual(
      ok.streaming?.files.map((f) => [f.name, f.data.length, f.executable]),
      [
        ['mapper.py', 1, true],
        ['words.txt', 3, false],
      ],
    );
    assert.equal('streaming' in validateSubmission(base), false);
  });

  it('refuses names with a directory, twice the same name, and more than 8 MiB in all', () => {
    for (const files of [
      [file('../x')],
      [file('a/b')],
      [file('..')],
      [file('')],
      [file('same'), file('same')],
      [file('big', 5 << 20), file('bigger', 4 << 20)],
      [{ name: 'x', data: 'text', executable: false }],
    ]) {
      assert.throws(
        () => validateSubmission({ ...base, streaming: { files } }),
        { code: 'EBADJOB', message: /streaming/ },
        JSON.stringify(files.map((f) => f.name)),
      );
    }
  });
});

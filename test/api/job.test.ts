import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineJob, textInput, validateJobDefinition } from '../../src/api/index.js';
import { MinimrError } from '../../src/errors.js';

describe('defineJob: map or mapSplit', () => {
  it('takes a job with map, or with mapSplit', () => {
    assert.doesNotThrow(() => defineJob({ name: 'per-record', input: textInput(), map: () => undefined }));
    assert.doesNotThrow(() => defineJob({ name: 'per-split', input: textInput(), mapSplit: async () => undefined }));
  });

  it('a job with both is EBADJOB, naming the job', () => {
    assert.throws(
      () => defineJob({ name: 'both', input: textInput(), map: () => undefined, mapSplit: async () => undefined }),
      (e: unknown) =>
        e instanceof MinimrError && e.code === 'EBADJOB' && /job "both".*both `map` and `mapSplit`/.test(e.message),
    );
    assert.deepEqual(
      validateJobDefinition({ name: 'both', input: textInput(), map: () => undefined, mapSplit: () => undefined }),
      ['the job defines both `map` and `mapSplit`: define one (`map` per record, `mapSplit` per split)'],
    );
  });

  it('a job with neither, or a mapSplit that is not a function, is refused saying so', () => {
    assert.throws(
      () => defineJob({ name: 'none', input: textInput() }),
      /`map` must be a function \(or define `mapSplit`\)/,
    );
    assert.deepEqual(validateJobDefinition({ name: 'bad', input: textInput(), mapSplit: 'scan' }), [
      '`mapSplit` must be a function when given',
    ]);
  });
});

describe('reducePartition', () => {
  it('is a function when given, and not beside reduce', () => {
    const map = () => undefined;
    assert.deepEqual(
      validateJobDefinition({ name: 'rp', input: textInput(), map, reducePartition: async () => {} }),
      [],
    );
    assert.deepEqual(validateJobDefinition({ name: 'rp', input: textInput(), map, reducePartition: 'all' }), [
      '`reducePartition` must be a function when given',
    ]);
    assert.deepEqual(
      validateJobDefinition({ name: 'rp', input: textInput(), map, reduce: map, reducePartition: async () => {} }),
      ['the job defines both `reduce` and `reducePartition`: define one'],
    );
  });
});

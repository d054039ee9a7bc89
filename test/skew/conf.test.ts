import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateJobConf } from '../../src/runtime/index.js';
import { validateSubmission } from '../../src/runtime/wire/submission.js';
import { minimalSubmission } from '../helpers/submission.js';
import { CountMinSketch } from '../../src/skew/index.js';

const base = minimalSubmission;

describe('skew settings', () => {
  it('accepts the strategies and a partition factor', () => {
    assert.deepEqual(validateJobConf({ 'skew.strategy': 'simple', 'skew.partitionFactor': 8 }), {
      'skew.strategy': 'simple',
      'skew.partitionFactor': 8,
    });
    assert.deepEqual(
      validateJobConf({
        'skew.strategy': 'cms',
        'skew.sketchDepth': 5,
        'skew.sampleRecords': 100,
        'skew.sampleSplits': 2,
      }),
      {
        'skew.strategy': 'cms',
        'skew.sketchDepth': 5,
        'skew.sampleRecords': 100,
        'skew.sampleSplits': 2,
      },
    );
  });

  it('refuses a bad strategy or factor with EBADJOB', () => {
    for (const conf of [
      { 'skew.strategy': 'zipf' },
      { 'skew.strategy': 3 },
      { 'skew.partitionFactor': 0 },
      { 'skew.partitionFactor': 1.5 },
      { 'skew.partitionFactor': '4' },
      { 'skew.partitionFactor': 1001 },
      { 'skew.sketchDepth': 0 },
      { 'skew.sketchDepth': 17 },
      { 'skew.sampleRecords': -1 },
      { 'skew.typo': 1 },
    ]) {
      assert.throws(
        () => validateJobConf(conf),
        (err: Error & { code?: string }) => err.code === 'EBADJOB' && /skew\./.test(err.message),
        JSON.stringify(conf),
      );
    }
  });

  it('refuses a cms submission without a sketch, or with one of the wrong width', () => {
    assert.throws(() => validateSubmission({ ...base, conf: { 'skew.strategy': 'cms' } }), { code: 'EBADJOB' });
    const sample = { sketch: new CountMinSketch(4, 5).toWire(), sampleMs: 1, inputRecords: 10, outputRecords: 20 };
    assert.throws(
      () =>
        validateSubmission({
          ...base,
          conf: { 'skew.strategy': 'cms', 'skew.partitionFactor': 2 },
          skewSample: sample,
        }),
      {
        code: 'EBADJOB',
        message: /5 counters per row, the job 6 partitions/,
      },
    );
    const ok = validateSubmission({
      ...base,
      conf: { 'skew.strategy': 'cms', 'skew.partitionFactor': 2 },
      skewSample: { ...sample, sketch: new CountMinSketch(4, 6).toWire() },
    });
    assert.equal(ok.skewSample?.sketch.width, 6);
    assert.throws(() => validateSubmission({ ...base, reducers: 1000, conf: { 'skew.partitionFactor': 1000 } }), {
      code: 'EBADJOB',
      message: /partitions/,
    });
  });
});

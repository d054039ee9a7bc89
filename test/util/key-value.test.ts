import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import { parseConfPairs } from '../../src/runtime/index.js';
import { keyValuePairs } from '../../src/util/index.js';

test('key=value items split at the first "=", values may be empty or hold "="; no list is no pairs', () => {
  assert.deepEqual(keyValuePairs(['a=1', 'b=', 'c=x=y'], '--param'), [
    ['a', '1'],
    ['b', ''],
    ['c', 'x=y'],
  ]);
  assert.deepEqual(keyValuePairs(undefined, '--param'), []);
});

test('an item without a key or without "=" is EBADJOB naming the option and the item', () => {
  for (const item of ['=1', 'novalue']) {
    assert.throws(
      () => keyValuePairs([item], '--conf'),
      (err) => isMinimrError(err, 'EBADJOB') && err.message === `--conf takes key=value, got "${item}"`,
    );
  }
});

test('--conf pairs: numbers as numbers, buffer sizes as sizes, then checked as a job conf', () => {
  assert.deepEqual(
    parseConfPairs(['job.reduceSlowStart=0.05', 'shuffle.map.bufferBytes=1m', 'shuffle.compress=none']),
    {
      'job.reduceSlowStart': 0.05,
      'shuffle.map.bufferBytes': 1 << 20,
      'shuffle.compress': 'none',
    },
  );
  assert.throws(
    () => parseConfPairs(['job.reduceSlowStart=2']),
    (err) => isMinimrError(err, 'EBADJOB'),
  );
});

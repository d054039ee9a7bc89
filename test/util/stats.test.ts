import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meanWithStandardError } from '../../src/util/index.js';

test('mean and standard error of the mean, by hand: 1, 2, 3, 6', () => {
  // mean 3; deviations -2 -1 0 3, squares 4 1 0 9 = 14; variance 14/3; SE sqrt(14/3/4).
  const r = meanWithStandardError([1, 2, 3, 6]);
  assert.equal(r.mean, 3);
  assert.equal(r.n, 4);
  assert.ok(Math.abs(r.standardError - Math.sqrt(14 / 12)) < 1e-12);
});

test('one value has a mean but no standard error', () => {
  const r = meanWithStandardError([-1.39]);
  assert.equal(r.mean, -1.39);
  assert.ok(Number.isNaN(r.standardError));
});

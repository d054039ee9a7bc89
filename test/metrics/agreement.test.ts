/** perJobAgreement against shares counted by hand. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobDurations, perJobAgreement } from '../../src/metrics/index.js';

test('the share of the reference jobs within 10%, boundaries included', () => {
  const reference = { a: 100, b: 200, c: 300, d: 400, e: 1000 };
  // a: 110 is exactly +10% (agrees); b: 179 is -10.5% (no); c: 270 is exactly -10% (agrees);
  // d: missing (no); e: 1099 is +9.9% (agrees). 3 of 5.
  const other = new Map([
    ['a', 110],
    ['b', 179],
    ['c', 270],
    ['e', 1099],
  ]);
  assert.equal(perJobAgreement(other, reference), 3 / 5);
  // With a 20% tolerance b agrees too: 4 of 5.
  assert.equal(perJobAgreement(other, reference, 0.2), 4 / 5);
});

test("unfinished jobs: the other run's disagree, the reference's are left out", () => {
  const reference = new Map<string, number | null>([
    ['x', 50],
    ['y', null],
    ['z', 80],
  ]);
  const other = { x: null, y: 1, z: 80 };
  // y has no reference duration: 2 jobs compared, x unfinished in the other run, z equal: 1 of 2.
  assert.equal(perJobAgreement(other, reference), 1 / 2);
  assert.ok(Number.isNaN(perJobAgreement(other, { y: null })));
  assert.ok(Number.isNaN(perJobAgreement(other, {})));
});

test('a run agrees fully with itself; jobs only the other run has do not count', () => {
  const run = { j1: 10, j2: 20 };
  assert.equal(perJobAgreement(run, run), 1);
  assert.equal(perJobAgreement({ ...run, j3: 5 }, run), 1);
  assert.throws(() => perJobAgreement(run, run, -0.1), RangeError);
});

test('jobDurations keys response times by job id', () => {
  assert.deepEqual(
    [
      ...jobDurations([
        { id: 'a', responseMs: 5 },
        { id: 'b', responseMs: 7 },
      ]),
    ],
    [
      ['a', 5],
      ['b', 7],
    ],
  );
});

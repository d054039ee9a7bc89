/** Mt19937 against NumPy's legacy RandomState and the MT19937 reference output. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Mt19937 } from '../../src/util/index.js';

test('MT19937 seeded 5489 gives the reference generator first output', () => {
  // mt19937ar.c's init_genrand(5489): first genrand_int32() is 3499211612.
  assert.equal(new Mt19937(5489).nextUint32(), 3499211612);
});

test('randomSample and uniform draw what numpy.random.seed(s) then random_sample()/uniform() draw', () => {
  // Printed by NumPy 2.4 (legacy RandomState) for each seed.
  const zero = new Mt19937(0);
  assert.deepEqual(
    [zero.randomSample(), zero.randomSample(), zero.randomSample()],
    [0.5488135039273248, 0.7151893663724195, 0.6027633760716439],
  );
  const one = new Mt19937(1);
  assert.equal(one.randomSample(), 0.417022004702574);
  assert.equal(one.uniform(10, 60), 46.0162246721079);
  assert.equal(new Mt19937(5489).randomSample(), 0.8147236863931789);
  assert.equal(new Mt19937(4294967295).randomSample(), 0.0976320289940138);
  assert.equal(new Mt19937(12345).uniform(0, 1000), 929.6160928171479);
});

test('seeds outside NumPy range are refused', () => {
  assert.throws(() => new Mt19937(-1), RangeError);
  assert.throws(() => new Mt19937(2 ** 32), RangeError);
  assert.throws(() => new Mt19937(1.5), RangeError);
});

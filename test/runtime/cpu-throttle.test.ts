import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuThrottle, type ThrottleClock } from '../../src/runtime/task/cpu-throttle.js';

/** A clock the test moves by hand: wall time and the process's CPU time. */
function manualClock(): ThrottleClock & { advance(wallMs: number, cpuMs: number): void } {
  let wall = 1000;
  let cpu = 50;
  return {
    nowMs: () => wall,
    cpuMs: () => cpu,
    advance(wallMs: number, cpuMs: number) {
      wall += wallMs;
      cpu += cpuMs;
    },
  };
}

test("'working' basis: owes (F - 1) x the wall time worked, waits for a core included", () => {
  const clock = manualClock();
  const t = new CpuThrottle(4, 'working', clock);
  // 30 ms on the clock, of which only 10 ms on a core (the rest waiting for one): 3 x 30 owed.
  clock.advance(30, 10);
  assert.equal(t.owedMs(), 90);
});

test("'cpu' basis: owes F x the CPU time used, minus the time that has passed", () => {
  const clock = manualClock();
  const t = new CpuThrottle(4, 'cpu', clock);
  // Alone on a core: 10 ms of work in 10 ms; a core 4x slower would take 40, so 30 are owed.
  clock.advance(10, 10);
  assert.equal(t.owedMs(), 30);
});

test("'cpu' basis: time spent waiting for a core counts toward what is owed", () => {
  const clock = manualClock();
  const t = new CpuThrottle(4, 'cpu', clock);
  // 10 ms of CPU took 30 ms (sharing a core with two others): 40 - 30 = 10 ms owed, where the
  // 'working' basis would owe 90 and so multiply the contention by F.
  clock.advance(30, 10);
  assert.equal(t.owedMs(), 10);
  // Contention beyond F x the cores: nothing owed (negative), the task runs as fast as it can.
  clock.advance(100, 10);
  assert.ok(t.owedMs() <= 0);
});

test("'cpu' basis: a pace starts a new interval from the CPU time and wall time at its end", async () => {
  const clock = manualClock();
  const t = new CpuThrottle(3, 'cpu', clock);
  clock.advance(0, 0);
  await t.pace(); // nothing owed: no sleep, but the interval restarts
  clock.advance(5, 5);
  assert.equal(t.owedMs(), 10);
  assert.equal(t.sleptMs, 0);
});

test('factor 1 never sleeps on either basis', async () => {
  for (const basis of ['working', 'cpu'] as const) {
    const clock = manualClock();
    const t = new CpuThrottle(1, basis, clock);
    clock.advance(100, 100);
    assert.equal(t.due(), false);
    await t.pace();
    assert.equal(t.sleptMs, 0);
  }
});

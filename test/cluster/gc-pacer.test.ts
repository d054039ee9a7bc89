import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const pacer = fileURLToPath(new URL('../../src/shuffle/gc-pacer.js', import.meta.url));

/** Runs `body` in a fresh node process (optionally with --expose-gc); returns its stdout. */
function run(flags: string[], body: string): string {
  const script =
    `const { noteTransientBytes, collectGarbageNow, lendToGcPace, ` +
    `GC_PACE_BYTES, MAX_LENT_BYTES } = await ` +
    `import(${JSON.stringify(pacer)});\n${body}`;
  return execFileSync(process.execPath, [...flags, '--input-type=module', '-e', script], { encoding: 'utf8' });
}

// Full GCs are counted with a PerformanceObserver; the process makes no garbage of its own in between.
const countMajorGcs = `
const { PerformanceObserver, constants } = await import('node:perf_hooks');
let majors = 0;
const obs = new PerformanceObserver((list) => { for (const e of list.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++; });
obs.observe({ entryTypes: ['gc'] });
const settle = () => new Promise((r) => setTimeout(r, 50));
`;

test('a full GC runs once per GC_PACE_BYTES of transient bytes, when gc is exposed', () => {
  const out = run(
    ['--expose-gc'],
    `${countMajorGcs}
    await settle(); const before = majors;
    noteTransientBytes(GC_PACE_BYTES - 1); await settle(); const under = majors - before;
    noteTransientBytes(1); await settle(); const at = majors - before;
    for (let i = 0; i < 3 * 16; i++) noteTransientBytes(GC_PACE_BYTES / 16);
    await settle();
    console.log(JSON.stringify({ under, at, after: majors - before }));`,
  );
  assert.deepEqual(JSON.parse(out), { under: 0, at: 1, after: 4 });
});

test('a loan widens the pace until returned; loans add up; a GC run now restarts the count', () => {
  const out = run(
    ['--expose-gc'],
    `${countMajorGcs}
    const P = GC_PACE_BYTES;
    const seen = [];
    const step = async (f) => { f(); await settle(); seen.push(majors - before); };
    await settle(); const before = majors;
    const returnHalf = lendToGcPace(P / 2);
    await step(() => noteTransientBytes(P));          // 1 pace of 1.5: none
    await step(() => noteTransientBytes(P / 2));      // 1.5 paces: one
    await step(() => { returnHalf(); returnHalf(); }); // returned once only
    await step(() => noteTransientBytes(P - 1));      // back to 1 pace: none yet
    await step(() => collectGarbageNow());            // one, and the count restarts
    await step(() => noteTransientBytes(P - 1));      // none
    await step(() => noteTransientBytes(1));          // one
    const a = lendToGcPace(P), b = lendToGcPace(P);
    await step(() => { a(); noteTransientBytes(2 * P - 1); }); // b still lent: none
    await step(() => noteTransientBytes(1));          // one
    b();
    await step(() => noteTransientBytes(P));          // one
    const big = lendToGcPace(3 * P);
    await step(() => noteTransientBytes(2 * P));      // loans widen the pace by MAX_LENT_BYTES at most: one
    big();
    console.log(JSON.stringify({ seen, cap: MAX_LENT_BYTES / P }));`,
  );
  assert.deepEqual(JSON.parse(out), { seen: [0, 1, 1, 1, 2, 2, 3, 3, 4, 5, 6], cap: 1 });
});

test('without --expose-gc it does nothing', () => {
  const out = run(
    [],
    `${countMajorGcs}
    await settle(); const before = majors;
    for (let i = 0; i < 10; i++) noteTransientBytes(GC_PACE_BYTES);
    await settle(); console.log(majors - before);`,
  );
  assert.equal(out.trim(), '0');
});

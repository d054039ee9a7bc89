import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import { createShuffleCounters } from '../../src/shuffle/counters.js';
import { MapOutputDirectory } from '../../src/shuffle/map-output-directory.js';
import { mapOutputPaths } from '../../src/shuffle/paths.js';
import { ReduceShuffle } from '../../src/shuffle/reduce-shuffle.js';
import type { MapOutputLocation } from '../../src/shuffle/types.js';
import {
  JOB,
  SECRET,
  referenceInput,
  startWorker,
  stopWorker,
  twoWorkers,
  writeMapOutput,
  writeMaps,
} from './map-outputs.js';
import { withTempDir } from './support.js';

function loc(mapIndex: number, attempt = 0, workerId = 'w1'): MapOutputLocation {
  return { mapIndex, attemptId: `attempt_m${mapIndex}_${attempt}`, workerId, host: '127.0.0.1', dataPort: 1 };
}

/** What the directory hands out until it has nothing more now, as "map:partition@attempt". */
function drain(d: MapOutputDirectory): string[] {
  const out: string[] = [];
  for (let item = d.take(); item; item = d.take())
    out.push(`${item.loc.mapIndex}:${item.partition}@${item.loc.attemptId.slice(-1)}`);
  return out;
}

describe('MapOutputDirectory: the work of a reduce that learns its map outputs as they come', () => {
  it('outputs known at launch come partition by partition; later ones with all their partitions, as announced', () => {
    const d = new MapOutputDirectory({ mapsTotal: 4, partitions: [1, 3], locations: [loc(0), loc(2)] });
    assert.deepEqual(drain(d), ['0:1@0', '2:1@0', '0:3@0', '2:3@0']);
    assert.ok(d.waitingForMaps);
    d.add(loc(3));
    d.add(loc(3)); // told twice: nothing more to do
    assert.deepEqual(drain(d), ['3:1@0', '3:3@0']);
  });

  it("a lost output's unstarted segments wait for the map's next output; fetched ones are kept", () => {
    const d = new MapOutputDirectory({ mapsTotal: 2, partitions: [0, 1], locations: [loc(0), loc(1)] });
    const first = d.take()!; // 0:0
    d.fetched(first);
    d.lose(0, 'attempt_m0_0');
    d.lose(1, 'attempt_m1_9'); // not the output it has: ignored
    assert.ok(d.isLost(first.loc));
    assert.deepEqual(drain(d), ['1:0@0', '1:1@0']);
    d.add(loc(0, 1, 'w2'));
    assert.deepEqual(drain(d), ['0:1@1'], 'only the partition not fetched yet, from the new output');
  });

  it('a segment whose output was lost during its fetch is fetched from the next output, whenever it comes', () => {
    const d = new MapOutputDirectory({ mapsTotal: 1, partitions: [0], locations: [loc(0)] });
    const item = d.take()!;
    d.lose(0, item.loc.attemptId);
    d.refetch(item);
    assert.deepEqual(drain(d), []);
    d.add(loc(0, 1));
    const again = d.take()!;
    assert.equal(again.loc.attemptId, 'attempt_m0_1');
    d.lose(0, 'attempt_m0_1');
    d.add(loc(0, 2));
    d.refetch(again); // its output was replaced meanwhile: straight to the newest
    assert.deepEqual(drain(d), ['0:0@2']);
  });

  it("is finished once every map's partitions are fetched; segments fetched while maps were missing are early", () => {
    const d = new MapOutputDirectory({ mapsTotal: 2, partitions: [0], locations: [loc(1)] });
    d.fetched(d.take()!);
    assert.equal(d.earlySegments, 1);
    assert.ok(!d.finished);
    d.add(loc(0));
    d.fetched(d.take()!);
    assert.equal(d.earlySegments, 1);
    assert.ok(d.finished);
    assert.ok(new MapOutputDirectory({ mapsTotal: 0, partitions: [0] }).finished);
  });

  it('refuses a map index outside the job and two outputs of one map at launch (EINTERNAL)', () => {
    const d = new MapOutputDirectory({ mapsTotal: 2, partitions: [0] });
    assert.throws(
      () => d.add(loc(2)),
      (e: unknown) => isMinimrError(e, 'EINTERNAL'),
    );
    assert.throws(
      () => new MapOutputDirectory({ mapsTotal: 2, partitions: [0], locations: [loc(0), loc(0, 1)] }),
      (e: unknown) => isMinimrError(e, 'EINTERNAL'),
    );
    assert.throws(
      () => d.add({ ...loc(0), attemptId: '../etc' }),
      (e: unknown) => isMinimrError(e, 'EBADPATH'),
    );
  });
});

describe('ReduceShuffle launched before the last map (slow start)', () => {
  const SIZES = [40, 900, 120, 15, 2500, 300, 0, 700];

  it(
    'fetches outputs as they are announced, within its budget, and ' +
      'gives the same reduce input as with all known at launch',
    async () => {
      await withTempDir(async (tmp) => {
        const [a, b] = await twoWorkers(tmp);
        try {
          const { mapRecords, locations, entries } = await writeMaps([a, b], { sizes: SIZES, numReduces: 2, seed: 11 });
          const rawTotal = entries.reduce((n, e) => n + e[1]!.rawLength, 0);
          for (const bufferBytes of [rawTotal * 2, Math.ceil(rawTotal / 4)]) {
            const directory = new MapOutputDirectory({
              mapsTotal: SIZES.length,
              partitions: [1],
              locations: locations.slice(0, 2),
            });
            const counters = createShuffleCounters();
            const workDir = join(tmp, `work-${bufferBytes}`);
            const rs = new ReduceShuffle({
              jobId: JOB,
              shuffleSecret: SECRET,
              reduceIndex: 1,
              directory,
              workDir,
              bufferBytes,
              concurrency: 2,
              counters,
            });
            try {
              const running = rs.run();
              // The other maps finish one by one while the reduce runs; the last one comes once all others are fetched.
              for (const l of locations.slice(2, -1)) {
                await new Promise((r) => setTimeout(r, 10));
                directory.add(l);
              }
              while (directory.earlySegments < SIZES.length - 1) await new Promise((r) => setTimeout(r, 5));
              directory.add(locations.at(-1)!);
              const out = [...(await running)].map(([k, v]) => `${k.toString('hex')}:${v.toString('hex')}`);
              assert.deepEqual(out, referenceInput(mapRecords, 1));
              assert.ok(
                counters.peakBufferBytes <= bufferBytes,
                `peak ${counters.peakBufferBytes} within the budget ${bufferBytes}`,
              );
            } finally {
              await rs.close();
            }
          }
        } finally {
          await stopWorker(a);
          await stopWorker(b);
        }
      });
    },
  );

  it(
    'an output lost while it is fetched, or before, is read from ' + "the map's re-run: no EFETCH, same input",
    async () => {
      await withTempDir(async (tmp) => {
        const [a, b] = await twoWorkers(tmp);
        // Slow enough that the fetch is surely in flight when the test loses its output, however loaded the machine.
        const slow = await startWorker('wS', join(tmp, 's'), 10_000);
        try {
          const { mapRecords, locations } = await writeMaps([a, b], {
            sizes: [300, 400, 500, 200],
            numReduces: 1,
            seed: 12,
          });
          // Map 1's first output is on the slow worker; its re-run lands on worker B.
          const first = { ...locations[1]!, attemptId: 'attempt_m1_0', workerId: slow.workerId, dataPort: slow.port };
          await writeMapOutput(mapOutputPaths(slow.rootDir, JOB, first.attemptId).dir, mapRecords[1]!, 1);
          const rerun = { ...locations[1]!, attemptId: 'attempt_m1_1', workerId: b.workerId, dataPort: b.port };
          await writeMapOutput(mapOutputPaths(b.rootDir, JOB, rerun.attemptId).dir, mapRecords[1]!, 1);
          // Map 3's first output is lost before anyone fetched it; its re-run is on worker A.
          const lost3 = { ...locations[3]!, attemptId: 'attempt_m3_0', workerId: b.workerId, dataPort: b.port };
          const rerun3 = { ...locations[3]!, attemptId: 'attempt_m3_1', workerId: a.workerId, dataPort: a.port };
          await writeMapOutput(mapOutputPaths(a.rootDir, JOB, rerun3.attemptId).dir, mapRecords[3]!, 1);

          const directory = new MapOutputDirectory({
            mapsTotal: 4,
            partitions: [0],
            locations: [first, locations[0]!],
          });
          const rs = new ReduceShuffle({
            jobId: JOB,
            shuffleSecret: SECRET,
            reduceIndex: 0,
            directory,
            workDir: join(tmp, 'work'),
            bufferBytes: 1 << 20,
            concurrency: 2,
            retries: 1,
            backoffMs: 10,
          });
          try {
            const running = rs.run();
            while (slow.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
            // The slow worker dies with map 1's fetch in flight, and the map is re-run elsewhere.
            directory.lose(1, first.attemptId);
            await stopWorker(slow);
            directory.add(locations[2]!);
            directory.add(lost3);
            directory.lose(3, lost3.attemptId);
            await new Promise((r) => setTimeout(r, 50));
            directory.add(rerun);
            directory.add(rerun3);
            const out = [...(await running)].map(([k, v]) => `${k.toString('hex')}:${v.toString('hex')}`);
            assert.deepEqual(out, referenceInput(mapRecords, 0));
          } finally {
            await rs.close();
          }
          assert.equal(b.requests.filter((u) => u.includes(lost3.attemptId)).length, 0, 'a lost output is not fetched');
          assert.equal(b.requests.filter((u) => u.includes(rerun.attemptId)).length, 1);
        } finally {
          await stopWorker(a);
          await stopWorker(b);
          await stopWorker(slow).catch(() => undefined);
        }
      });
    },
  );

  it('an output that fails to fetch and nobody said was lost fails the reduce with EFETCH naming it', async () => {
    await withTempDir(async (tmp) => {
      const [a, b] = await twoWorkers(tmp);
      try {
        const { locations } = await writeMaps([a], { sizes: [100, 100], numReduces: 1, seed: 13 });
        const directory = new MapOutputDirectory({ mapsTotal: 3, partitions: [0], locations });
        const gone = { ...locations[0]!, mapIndex: 2, attemptId: 'attempt_m2_0' };
        const rs = new ReduceShuffle({
          jobId: JOB,
          shuffleSecret: SECRET,
          reduceIndex: 0,
          directory,
          workDir: join(tmp, 'work'),
          bufferBytes: 1 << 20,
          retries: 0,
        });
        try {
          const running = rs.run();
          directory.add(gone);
          await assert.rejects(
            running,
            (e: unknown) =>
              isMinimrError(e, 'EFETCH') && e.details.mapIndex === 2 && e.details.attemptId === 'attempt_m2_0',
          );
        } finally {
          await rs.close();
        }
      } finally {
        // Both: a worker left listening keeps the test file's process from ever exiting.
        await stopWorker(a);
        await stopWorker(b);
      }
    });
  });
});

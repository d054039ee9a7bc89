import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { Namenode, owedReplicaTarget } from '../../src/storage/index.js';

/** favoredWorkers puts every block's replicas on the favored workers, least loaded first. */
describe('namenode: favored workers', () => {
  test('replicas go to the favored workers only, spread by load, and bad lists are refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'minimr-favored-'));
    const nn = new Namenode({ dbPath: join(dir, 'nn'), defaultReplication: 2, defaultBlockSize: 1024 });
    await nn.open();
    try {
      for (let i = 0; i < 6; i++)
        nn.registerDatanode(
          { workerId: `w${i}`, host: '127.0.0.1', dataPort: 1000 + i, rack: `/r${Math.floor(i / 2)}` },
          [],
        );
      await nn.create('/private', { favoredWorkers: ['w4', 'w5', 'w3'] });
      const used = new Map<string, number>();
      for (let b = 0; b < 6; b++) {
        const { blockId, targets } = await nn.allocateBlock('/private');
        const ids = targets.map((t) => t.workerId);
        assert.equal(ids.length, 2);
        for (const id of ids) {
          assert.ok(['w3', 'w4', 'w5'].includes(id), `block ${b} placed on ${id}`);
          used.set(id, (used.get(id) ?? 0) + 1);
        }
        await nn.commitBlock('/private', { blockId, length: 1024, crc32: 0, workerIds: ids });
      }
      // 12 replicas over 3 favored workers, least loaded first: 4 each.
      assert.deepEqual([...used.values()].sort(), [4, 4, 4]);
      await nn.complete('/private');
      await assert.rejects(
        nn.create('/bad', { favoredWorkers: [''] }),
        (e: unknown) => e instanceof MinimrError && e.code === 'EBADJOB',
      );
      // One favored worker for replication 2: the second replica goes where the default policy says (another rack).
      await nn.create('/one', { favoredWorkers: ['w0'] });
      const { targets } = await nn.allocateBlock('/one');
      assert.equal(targets[0]!.workerId, 'w0');
      assert.notEqual(targets[1]!.rack, '/r0');
    } finally {
      await nn.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** Where an owed replica no scheduler placed goes: a rack-mate of the first holder, rotating by index. */
describe('owedReplicaTarget', () => {
  const workers = [
    { id: 'w4', rack: 'r2' },
    { id: 'w1', rack: 'r1' },
    { id: 'w3', rack: 'r1' },
    { id: 'w2', rack: 'r1' },
  ];
  test("the holder's rack-mates in id order, rotating with the index", () => {
    assert.deepEqual(
      [0, 1, 2, 3].map((i) => owedReplicaTarget(['w1'], workers, i)),
      ['w2', 'w3', 'w2', 'w3'],
    );
  });
  test('another rack only when the rack is full; nothing when every worker holds one', () => {
    assert.equal(owedReplicaTarget(['w1', 'w2', 'w3'], workers, 5), 'w4');
    assert.equal(owedReplicaTarget(['w1', 'w2', 'w3', 'w4'], workers, 0), undefined);
    assert.equal(owedReplicaTarget(['gone'], workers, 1), 'w2', 'a holder no longer listed: any worker, in id order');
  });
});

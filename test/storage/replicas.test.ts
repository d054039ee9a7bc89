/**
 * Issue 34, "replicas where the NameNode says": repair targets, available-space placement, block
 * reports, the block scanner's findings, complete waiting for replication, and fsck as a user.
 */
import assert from 'node:assert/strict';
import { open as openFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { isMinimrError } from '../../src/errors.js';
import {
  BlockScanner,
  LocalDiskBlockStore,
  Namenode,
  type DatanodeAddress,
  type NamenodeOptions,
  type ScannedReplica,
} from '../../src/storage/index.js';
import { makeTempDir, pseudoRandomBytes, silentLogger } from './helpers.js';

const MB = 1024 * 1024;

function node(workerId: string, rack = '/r1'): DatanodeAddress {
  return { workerId, host: '127.0.0.1', dataPort: 1, rack };
}

async function withNamenode(
  workers: readonly string[],
  test: (nn: Namenode) => Promise<void>,
  options: Omit<NamenodeOptions, 'dbPath'> = {},
): Promise<void> {
  const { dir, cleanup } = await makeTempDir();
  const nn = new Namenode({ dbPath: join(dir, 'nn'), logger: silentLogger, superuser: 'root', ...options });
  await nn.open();
  for (const w of workers) nn.registerDatanode(node(w), []);
  try {
    await test(nn);
  } finally {
    await nn.close();
    await cleanup();
  }
}

/** Creates `path` and commits one block of `length` bytes on `holders` (its crc32 is the length). */
async function oneBlock(
  nn: Namenode,
  path: string,
  length: number,
  replication: number,
  holders?: readonly string[],
): Promise<string> {
  await nn.create(path, { replication });
  const { blockId, targets } = await nn.allocateBlock(path);
  await nn.commitBlock(path, {
    blockId,
    length,
    crc32: length,
    workerIds: holders ?? targets.map((t) => t.workerId),
  });
  return blockId;
}

function holdersOf(nn: Namenode, path: string): Promise<string[]> {
  return nn.getBlocks(path).then((blocks) => blocks[0]!.locations.map((l) => l.workerId).sort());
}

describe('repair targets', () => {
  it('a corrupt replica is copied to another worker, never back to the one deleting it', async () => {
    await withNamenode(['w1', 'w2', 'w3'], async (nn) => {
      const blockId = await oneBlock(nn, '/f', 1000, 2, ['w1', 'w2']);
      await nn.complete('/f');
      nn.replicaCorrupt('w2', blockId);
      assert.deepEqual(nn.underReplicatedBlocks(), [blockId]);
      // The deletion is handed out before the repair (as a heartbeat does): w2 is still deleting it.
      assert.deepEqual(nn.takeBlockDeletions('w2'), [blockId]);
      const work = nn.takeReplicationWork('w1');
      assert.deepEqual(
        work.map((w) => w.targets.map((t) => t.workerId)),
        [['w3']],
      );
    });
  });

  it('with no other worker, the repair waits for the deletion rather than copying to the deleting worker', async () => {
    await withNamenode(
      ['w1', 'w2'],
      async (nn) => {
        const blockId = await oneBlock(nn, '/f', 1000, 2, ['w1', 'w2']);
        await nn.complete('/f');
        nn.replicaCorrupt('w2', blockId);
        assert.deepEqual(nn.takeReplicationWork('w1'), [], 'the deletion is still queued');
        const sentAt = Date.now();
        nn.takeBlockDeletions('w2', sentAt);
        assert.deepEqual(nn.takeReplicationWork('w1', sentAt + 10), [], 'the deletion is not yet done');
        // A block report without the block shows the deletion done: w2 may get a fresh copy.
        nn.blockReport('w2', [], sentAt + 20);
        assert.deepEqual(
          nn.takeReplicationWork('w1', sentAt + 30).map((w) => w.targets.map((t) => t.workerId)),
          [['w2']],
        );
      },
      { replicationTimeoutMs: 60_000 },
    );
  });

  it('a worker without room is no repair target', async () => {
    await withNamenode(['w1', 'w2', 'w3'], async (nn) => {
      const blockId = await oneBlock(nn, '/f', 2 * MB, 2, ['w1', 'w2']);
      await nn.complete('/f');
      nn.datanodeHeartbeat('w3', { capacityBytes: 100 * MB, freeBytes: 2 * MB });
      nn.replicaCorrupt('w2', blockId);
      nn.takeBlockDeletions('w2');
      assert.deepEqual(nn.takeReplicationWork('w1'), []);
      nn.datanodeHeartbeat('w3', { capacityBytes: 100 * MB, freeBytes: 50 * MB });
      assert.deepEqual(
        nn.takeReplicationWork('w1').map((w) => w.targets.map((t) => t.workerId)),
        [['w3']],
      );
    });
  });
});

describe('a copy refused for lack of room', () => {
  it('is handed out again at once, to another worker; the full one is no target until it reports room', async () => {
    await withNamenode(['w1', 'w2', 'w3', 'w4'], async (nn) => {
      const blockId = await oneBlock(nn, '/f', 1000, 2, ['w1']);
      const [first] = nn.takeReplicationWork('w1');
      const full = first!.targets[0]!.workerId;
      assert.deepEqual(nn.takeReplicationWork('w1'), [], 'in flight');
      nn.copyRefusedFull(full, blockId);
      const [again] = nn.takeReplicationWork('w1');
      assert.ok(again && again.targets[0]!.workerId !== full, 'another target');
      await nn.create('/g', { replication: 3 });
      for (let i = 0; i < 3; i++)
        assert.ok(!(await nn.allocateBlock('/g')).targets.some((t) => t.workerId === full), 'no block for it');
      nn.datanodeHeartbeat(full, { capacityBytes: 100 * MB, freeBytes: 90 * MB });
      assert.ok(
        (await nn.allocateBlock('/g')).targets.some((t) => t.workerId === full),
        'room again',
      );
    });
  });
});

describe('available-space placement', () => {
  it('prefers the worker with the most free space, and a full worker gets no block until it has room', async () => {
    await withNamenode(
      ['w1', 'w2', 'w3'],
      async (nn) => {
        nn.datanodeHeartbeat('w1', { capacityBytes: 100 * MB, freeBytes: 10 * MB });
        nn.datanodeHeartbeat('w2', { capacityBytes: 100 * MB, freeBytes: 90 * MB });
        nn.datanodeHeartbeat('w3', { capacityBytes: 100 * MB, freeBytes: 50 * MB });
        await nn.create('/a', { replication: 1 });
        assert.deepEqual(
          (await nn.allocateBlock('/a')).targets.map((t) => t.workerId),
          ['w2'],
        );
        // Replica 1 on the writer when it has room; not when it is full.
        nn.datanodeHeartbeat('w1', { capacityBytes: 100 * MB, freeBytes: MB / 2 });
        const fromFull = await nn.allocateBlock('/a', { workerId: 'w1' });
        assert.notEqual(fromFull.targets[0]!.workerId, 'w1');
        // Blocks being written count against the free space until the next report: w3 (50 MB free) takes
        // blocks of 1 MB until what is free less what is incoming is below w2's bucket, and so on; w1 none.
        const chosen: string[] = [];
        for (let i = 0; i < 60; i++) chosen.push((await nn.allocateBlock('/a')).targets[0]!.workerId);
        assert.ok(!chosen.includes('w1'), 'the full worker gets nothing');
        assert.ok(chosen.includes('w3') && chosen.includes('w2'));
        // Room again: it is a target again.
        nn.datanodeHeartbeat('w1', { capacityBytes: 100 * MB, freeBytes: 99 * MB });
        assert.deepEqual(
          (await nn.allocateBlock('/a', { workerId: 'w1' })).targets.map((t) => t.workerId),
          ['w1'],
        );
      },
      { defaultBlockSize: MB },
    );
  });

  it('EDISKFULL, naming no server path, when no worker has room for a block', async () => {
    await withNamenode(
      ['w1', 'w2'],
      async (nn) => {
        for (const w of ['w1', 'w2']) nn.datanodeHeartbeat(w, { capacityBytes: 4 * MB, freeBytes: MB / 2 });
        await nn.create('/full', { replication: 2 });
        await assert.rejects(
          nn.allocateBlock('/full'),
          (err) => isMinimrError(err, 'EDISKFULL') && /no datanode has room/.test(err.message),
        );
      },
      { defaultBlockSize: MB },
    );
  });

  it('free fractions within 5% of each other count as equal: the less-loaded worker goes first', async () => {
    await withNamenode(['w1', 'w2'], async (nn) => {
      await oneBlock(nn, '/loaded', 10, 1, ['w1']);
      nn.datanodeHeartbeat('w1', { capacityBytes: 1000 * MB, freeBytes: 801 * MB });
      nn.datanodeHeartbeat('w2', { capacityBytes: 1000 * MB, freeBytes: 800 * MB });
      await nn.create('/b', { replication: 1 });
      assert.equal((await nn.allocateBlock('/b')).targets[0]!.workerId, 'w2');
    });
  });
});

describe('block reports', () => {
  it('a listed replica the disk lacks is dropped and repaired; an orphan is deleted; a wanted copy is adopted', async () => {
    await withNamenode(['w1', 'w2', 'w3'], async (nn) => {
      const blockId = await oneBlock(nn, '/f', 1000, 2, ['w1', 'w2']);
      await nn.complete('/f');
      const later = Date.now() + 60_000;
      // A report taken before a replica landed does not drop it.
      assert.deepEqual(nn.blockReport('w2', [], Date.now()).dropped, []);
      const outcome = nn.blockReport('w2', [{ blockId: 'blk_999', length: 5 }], later);
      assert.deepEqual(outcome, { dropped: [blockId], adopted: [], deleted: ['blk_999'] });
      assert.deepEqual(await holdersOf(nn, '/f'), ['w1']);
      assert.deepEqual(nn.underReplicatedBlocks(), [blockId]);
      assert.deepEqual(nn.takeBlockDeletions('w2'), ['blk_999']);
      assert.deepEqual(
        nn.takeReplicationWork('w1').map((w) => w.targets.map((t) => t.workerId)),
        [['w2']],
        'the disk that lost it may hold it again',
      );
      // w3 turns out to hold a copy (of the right length): adopted, the block is whole again.
      assert.deepEqual(nn.blockReport('w3', [{ blockId, length: 1000 }], later).adopted, [blockId]);
      assert.deepEqual(await holdersOf(nn, '/f'), ['w1', 'w3']);
      assert.deepEqual(nn.underReplicatedBlocks(), []);
      // A copy one too many, or of the wrong length, is deleted, not adopted.
      assert.deepEqual(nn.blockReport('w2', [{ blockId, length: 1000 }], later).deleted, [blockId]);
      assert.deepEqual(nn.blockReport('w3', [{ blockId, length: 999 }], later), {
        dropped: [blockId],
        adopted: [],
        deleted: [blockId],
      });
      assert.deepEqual(await holdersOf(nn, '/f'), ['w1']);
    });
  });

  it("the scanner's findings: a replica whose CRC-32 is not the block's is dropped, deleted and copied again", async () => {
    await withNamenode(['w1', 'w2', 'w3'], async (nn) => {
      const blockId = await oneBlock(nn, '/f', 1000, 2, ['w1', 'w2']);
      await nn.complete('/f');
      assert.deepEqual(nn.blocksScanned('w1', [{ blockId, length: 1000, crc32: 1000 }]), []);
      assert.deepEqual(nn.blocksScanned('w2', [{ blockId, length: 1000, crc32: 7 }]), [blockId]);
      assert.deepEqual(await holdersOf(nn, '/f'), ['w1']);
      assert.deepEqual(nn.takeBlockDeletions('w2'), [blockId]);
      assert.deepEqual(
        nn.takeReplicationWork('w1').map((w) => w.targets.map((t) => t.workerId)),
        [['w3']],
      );
    });
  });
});

describe('complete waits for the replication', () => {
  it('a block stored on fewer workers than asked is copied before the file is complete', async () => {
    await withNamenode(['w1', 'w2', 'w3'], async (nn) => {
      const blockId = await oneBlock(nn, '/f', 1000, 3, ['w1', 'w2']);
      let completed = false;
      const completing = nn.complete('/f').then(() => {
        completed = true;
      });
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(completed, false, 'not complete while a replica is owed');
      // w3, the target the writer gave up on, deletes what it may hold first; then it is a target again.
      const sentAt = Date.now();
      assert.deepEqual(nn.takeBlockDeletions('w3', sentAt), [blockId]);
      assert.deepEqual(nn.takeReplicationWork('w1', sentAt + 1000), []);
      // What a heartbeat of the source and the copy's report do.
      const [work] = nn.takeReplicationWork('w1', sentAt + 11_000);
      assert.deepEqual(
        work!.targets.map((t) => t.workerId),
        ['w3'],
      );
      nn.blockReceived('w3', blockId);
      await completing;
      assert.deepEqual(await holdersOf(nn, '/f'), ['w1', 'w2', 'w3']);
    });
  });

  it('EDISKFULL when the other workers have no room', async () => {
    await withNamenode(['w1', 'w2', 'w3'], async (nn) => {
      await oneBlock(nn, '/f', 2 * MB, 3, ['w1', 'w2']);
      nn.datanodeHeartbeat('w3', { capacityBytes: 4 * MB, freeBytes: MB });
      await assert.rejects(
        nn.complete('/f'),
        (err) => isMinimrError(err, 'EDISKFULL') && /has 2 of its 3 replicas/.test(err.message),
      );
    });
  });
});

describe('stale datanodes', () => {
  it('a silent datanode gets no new block while others will do, and a write does not wait for it', async () => {
    await withNamenode(
      ['w1', 'w2', 'w3'],
      async (nn) => {
        await new Promise((r) => setTimeout(r, 300));
        nn.datanodeHeartbeat('w1', undefined);
        nn.datanodeHeartbeat('w2', undefined);
        await nn.create('/s', { replication: 2 });
        for (let i = 0; i < 5; i++)
          assert.deepEqual((await nn.allocateBlock('/s')).targets.map((t) => t.workerId).sort(), ['w1', 'w2']);
        const blockId = await oneBlock(nn, '/t', 10, 3, ['w1', 'w2']);
        await nn.complete('/t');
        assert.deepEqual(nn.underReplicatedBlocks(), [blockId], 'still short: copied when w3 answers or is lost');
        nn.datanodeHeartbeat('w3', undefined);
        nn.takeBlockDeletions('w3', Date.now() - 60_000);
        assert.deepEqual(
          nn.takeReplicationWork('w1').map((w) => w.targets.map((t) => t.workerId)),
          [['w3']],
        );
      },
      { staleAfterMs: 200, deletionGraceMs: 1000 },
    );
  });
});

describe('fsck as a user', () => {
  it('lists only the paths the caller may list; the admin sees all', async () => {
    await withNamenode(['w1'], async (nn) => {
      const alice = nn.callerFor('alice');
      const bob = nn.callerFor('bob');
      for (const [user, caller] of [
        ['alice', alice],
        ['bob', bob],
      ] as const) {
        await nn.mkdir(`/home/${user}`, { parents: true });
        await nn.chown(`/home/${user}`, user, null);
        await nn.chmod(`/home/${user}`, '700', caller);
        await oneBlock(nn, `/home/${user}/data`, 10, 1);
        await nn.complete(`/home/${user}/data`);
        await nn.chown(`/home/${user}/data`, user, null);
      }
      await oneBlock(nn, '/public', 10, 1);
      await nn.complete('/public');
      const paths = async (who?: ReturnType<Namenode['callerFor']>) =>
        (await nn.fsck('/', who)).files.map((f) => f.path);
      assert.deepEqual(await paths(bob), ['/home/bob/data', '/public']);
      assert.deepEqual(await paths(alice), ['/home/alice/data', '/public']);
      assert.deepEqual(await paths(nn.callerFor('root')), ['/home/alice/data', '/home/bob/data', '/public']);
      assert.deepEqual(await paths(), ['/home/alice/data', '/home/bob/data', '/public']);
      await assert.rejects(nn.fsck('/home/alice/data', bob), (err) => isMinimrError(err, 'EPERM'));
    });
  });
});

describe('block scanner', () => {
  it('finds a flipped byte by its chunk checksum and a rewritten replica by its CRC-32, at a bounded rate', async () => {
    const { dir, cleanup } = await makeTempDir();
    try {
      const store = new LocalDiskBlockStore({ dir, workerId: 'w1' });
      await store.open();
      const good = pseudoRandomBytes(MB, 1);
      await store.write('blk_good', good);
      await store.write('blk_rot', pseudoRandomBytes(MB, 2));
      await store.write('blk_rewritten', Buffer.alloc(MB, 0x21));
      // Bit rot: one byte changed in the data file behind the store's back.
      const handle = await openFile(join(dir, 'blk_rot.blk'), 'r+');
      await handle.write(Buffer.from([0xff]), 0, 1, 12345);
      await handle.close();
      const scanned: ScannedReplica[] = [];
      const corrupt: string[] = [];
      const scanner = new BlockScanner({
        store,
        bytesPerSecond: 4 * MB,
        intervalMs: 60_000,
        scanned: (r) => scanned.push(...r),
        corrupt: (blockId) => corrupt.push(blockId),
      });
      const started = performance.now();
      assert.deepEqual(await scanner.scanOnce(), { scanned: 2, corrupt: 1 });
      const seconds = (performance.now() - started) / 1000;
      assert.ok(seconds >= 0.4, `about 2.x MB at 4 MB/s takes at least 0.4 s, took ${seconds}`);
      assert.deepEqual(corrupt, ['blk_rot']);
      assert.deepEqual(
        scanned.sort((a, b) => (a.blockId < b.blockId ? -1 : 1)),
        [
          { blockId: 'blk_good', length: MB, crc32: crc32(good) >>> 0 },
          { blockId: 'blk_rewritten', length: MB, crc32: crc32(Buffer.alloc(MB, 0x21)) >>> 0 },
        ],
      );
    } finally {
      await cleanup();
    }
  });
});

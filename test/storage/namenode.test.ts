import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isMinimrError, type MinimrErrorCode } from '../../src/errors.js';
import {
  chooseTargets,
  Namenode,
  sortByDistance,
  type DatanodeAddress,
  type PlacementNode,
} from '../../src/storage/index.js';
import { makeTempDir, silentLogger } from './helpers.js';

function node(workerId: string, rack: string): DatanodeAddress {
  return { workerId, host: '127.0.0.1', dataPort: 1, rack };
}

async function withNamenode(
  test: (nn: Namenode, reopen: () => Promise<Namenode>) => Promise<void>,
  options: { defaultBlockSize?: number; defaultReplication?: number } = {},
): Promise<void> {
  const { dir, cleanup } = await makeTempDir();
  const dbPath = join(dir, 'nn');
  let current = new Namenode({ dbPath, logger: silentLogger, ...options });
  await current.open();
  try {
    await test(current, async () => {
      await current.close();
      current = new Namenode({ dbPath, logger: silentLogger, ...options });
      await current.open();
      return current;
    });
  } finally {
    await current.close();
    await cleanup();
  }
}

function rejectsWith(code: MinimrErrorCode, path?: string): (err: unknown) => boolean {
  return (err) => isMinimrError(err, code) && (path === undefined || err.details.path === path);
}

/** Writes a file of `blocks` blocks through the NameNode alone, as a writer would. */
async function writeFile(
  nn: Namenode,
  path: string,
  lengths: number[],
  options: { replication?: number; writer?: string } = {},
): Promise<string[]> {
  await nn.create(path, { replication: options.replication });
  const ids: string[] = [];
  for (const length of lengths) {
    const { blockId, targets } = await nn.allocateBlock(
      path,
      options.writer ? { workerId: options.writer } : undefined,
    );
    await nn.commitBlock(path, { blockId, length, crc32: length, workerIds: targets.map((t) => t.workerId) });
    ids.push(blockId);
  }
  await nn.complete(path);
  return ids;
}

describe('Namenode namespace', () => {
  it('persists dirs, files, blocks and the block-id counter across close/open', async () => {
    await withNamenode(async (nn, reopen) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      await nn.mkdir('/data/in', { parents: true });
      const ids = await writeFile(nn, '/data/in/a.txt', [10, 5], { replication: 1 });
      const again = await reopen();
      const status = await again.stat('/data/in/a.txt');
      assert.equal(status.type, 'file');
      assert.equal(status.length, 15);
      assert.equal(status.replication, 1);
      assert.deepEqual(
        (await again.list('/data')).map((s) => [s.path, s.type]),
        [['/data/in', 'dir']],
      );
      // Locations are not persisted: they come back with the block report.
      assert.deepEqual(
        (await again.getBlocks('/data/in/a.txt')).map((b) => b.locations.length),
        [0, 0],
      );
      assert.deepEqual(again.registerDatanode(node('w1', 'r1'), [...ids, 'blk_999999']), ['blk_999999']);
      const blocks = await again.getBlocks('/data/in/a.txt');
      assert.deepEqual(
        blocks.map((b) => [b.blockId, b.offset, b.length, b.locations.map((l) => l.workerId)]),
        [
          [ids[0], 0, 10, ['w1']],
          [ids[1], 10, 5, ['w1']],
        ],
      );
      await again.create('/data/in/b.txt');
      const { blockId } = await again.allocateBlock('/data/in/b.txt');
      assert.ok(!ids.includes(blockId), 'block ids are never reused after a restart');
    });
  });

  it('validates paths', async () => {
    await withNamenode(async (nn) => {
      for (const bad of ['relative', '/a/../b', '/a//b', '/a/', '/./a', '']) {
        await assert.rejects(nn.mkdir(bad), rejectsWith('EBADPATH'), bad);
        await assert.rejects(nn.stat(bad), rejectsWith('EBADPATH'), bad);
      }
    });
  });

  it("refuses names past HDFS's limits (255-byte component, 8,000 characters, 1,000 levels) with EBADPATH naming the limit", async () => {
    await withNamenode(async (nn) => {
      const longName = `/${'n'.repeat(256)}`;
      // 128 two-byte characters are 256 bytes: the limit is in bytes, as HDFS's.
      const longUtf8 = `/${'é'.repeat(128)}`;
      const longPath = `/${Array.from({ length: 800 }, () => 'abcdefghij').join('/')}`;
      const deepPath = `/${Array.from({ length: 1001 }, () => 'd').join('/')}`;
      for (const [bad, limit] of [
        [longName, /limit of 255/],
        [longUtf8, /256 bytes .*limit of 255/],
        [longPath, /8800 characters .*limit of 8000/],
        [deepPath, /1001 levels .*limit of 1000/],
      ] as const) {
        const refused = (err: unknown) => isMinimrError(err, 'EBADPATH') && limit.test(err.message);
        await assert.rejects(nn.mkdir(bad, { parents: true }), refused, bad.slice(0, 20));
        await assert.rejects(nn.create(bad), refused, bad.slice(0, 20));
      }
      // At the limits, names are fine.
      await nn.mkdir(`/${'n'.repeat(255)}`);
      await nn.mkdir(`/${Array.from({ length: 1000 }, () => 'd').join('/')}`, { parents: true });
      await assert.rejects(nn.stat(`/${'é'.repeat(127)}`), rejectsWith('ENOENT'));
    });
  });

  it('mkdir, stat and list follow POSIX-like rules', async () => {
    await withNamenode(async (nn) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      await assert.rejects(nn.mkdir('/x/y'), rejectsWith('ENOENT', '/x'));
      await nn.mkdir('/x');
      await assert.rejects(nn.mkdir('/x'), rejectsWith('EEXIST', '/x'));
      await nn.mkdir('/x', { parents: true });
      await writeFile(nn, '/x/f', [3]);
      await assert.rejects(nn.mkdir('/x/f/g', { parents: true }), rejectsWith('ENOTDIR', '/x/f'));
      await assert.rejects(nn.create('/x/f/g'), rejectsWith('ENOTDIR', '/x/f'));
      await assert.rejects(nn.create('/x'), rejectsWith('EISDIR', '/x'));
      await assert.rejects(nn.create('/x/f'), rejectsWith('EEXIST', '/x/f'));
      await assert.rejects(nn.stat('/nope'), rejectsWith('ENOENT', '/nope'));
      await assert.rejects(nn.getBlocks('/x'), rejectsWith('EISDIR', '/x'));
      assert.deepEqual(
        (await nn.list('/x/f')).map((s) => s.path),
        ['/x/f'],
      );
      assert.equal((await nn.stat('/')).type, 'dir');
      await assert.rejects(nn.create('/new/parent/file', { parents: false }), rejectsWith('ENOENT', '/new/parent'));
      await nn.create('/new/parent/file');
      assert.equal((await nn.stat('/new/parent')).type, 'dir');
    });
  });

  it('a file under construction is invisible until complete', async () => {
    await withNamenode(async (nn) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      await nn.mkdir('/out');
      await nn.create('/out/part-0');
      const { blockId } = await nn.allocateBlock('/out/part-0');
      await nn.commitBlock('/out/part-0', { blockId, length: 4, crc32: 1, workerIds: ['w1'] });
      assert.deepEqual(await nn.list('/out'), []);
      await assert.rejects(nn.stat('/out/part-0'), rejectsWith('ENOENT'));
      await assert.rejects(nn.getBlocks('/out/part-0'), rejectsWith('ENOENT'));
      await nn.complete('/out/part-0');
      assert.deepEqual(
        (await nn.list('/out')).map((s) => [s.path, s.length]),
        [['/out/part-0', 4]],
      );
    });
  });

  it('complete with the last block commits it first and answers the status; a block not allocated to the file is refused', async () => {
    await withNamenode(async (nn, reopen) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      await nn.create('/out/part-1', { parents: true });
      const first = await nn.allocateBlock('/out/part-1');
      await nn.commitBlock('/out/part-1', { blockId: first.blockId, length: 7, crc32: 1, workerIds: ['w1'] });
      const last = await nn.allocateBlock('/out/part-1');
      await nn.create('/out/other');
      const other = await nn.allocateBlock('/out/other');
      await assert.rejects(
        nn.complete('/out/part-1', { blockId: other.blockId, length: 3, crc32: 2, workerIds: ['w1'] }),
        rejectsWith('EINTERNAL'),
      );
      await assert.rejects(nn.stat('/out/part-1'), rejectsWith('ENOENT'), 'still under construction');
      const status = await nn.complete('/out/part-1', {
        blockId: last.blockId,
        length: 3,
        crc32: 2,
        workerIds: ['w1'],
      });
      assert.deepEqual([status.path, status.type, status.length], ['/out/part-1', 'file', 10]);
      assert.deepEqual(
        (await (await reopen()).getBlocks('/out/part-1')).map((b) => [b.blockId, b.length]),
        [
          [first.blockId, 7],
          [last.blockId, 3],
        ],
        'both blocks journaled',
      );
    });
  });

  it('files left under construction by a crashed run are dropped on open; their blocks become orphans', async () => {
    await withNamenode(async (nn, reopen) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      await nn.create('/half');
      const { blockId } = await nn.allocateBlock('/half');
      await nn.commitBlock('/half', { blockId, length: 4, crc32: 1, workerIds: ['w1'] });
      const again = await reopen();
      await again.create('/half');
      assert.deepEqual(again.registerDatanode(node('w1', 'r1'), [blockId]), [blockId]);
    });
  });

  it('rename moves a file atomically and a directory with its whole subtree', async () => {
    await withNamenode(async (nn, reopen) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      await nn.mkdir('/out/_temporary/attempt_1', { parents: true });
      const ids = await writeFile(nn, '/out/_temporary/attempt_1/part-r-00000', [7]);
      await nn.rename('/out/_temporary/attempt_1/part-r-00000', '/out/part-r-00000');
      assert.deepEqual(
        (await nn.getBlocks('/out/part-r-00000')).map((b) => b.blockId),
        ids,
      );
      await assert.rejects(nn.stat('/out/_temporary/attempt_1/part-r-00000'), rejectsWith('ENOENT'));

      await nn.mkdir('/a/b/c', { parents: true });
      const deep = await writeFile(nn, '/a/b/c/f1', [1]);
      await writeFile(nn, '/a/b/f2', [2]);
      await nn.rename('/a/b', '/moved');
      assert.deepEqual(
        (await nn.list('/moved')).map((s) => s.path),
        ['/moved/c', '/moved/f2'],
      );
      assert.deepEqual(
        (await nn.getBlocks('/moved/c/f1')).map((b) => b.blockId),
        deep,
      );
      assert.deepEqual(await nn.list('/a'), []);
      await assert.rejects(nn.rename('/moved', '/moved/c/inside'), rejectsWith('EBADPATH'));
      await assert.rejects(nn.rename('/moved/f2', '/out/part-r-00000'), rejectsWith('EEXIST', '/out/part-r-00000'));
      await assert.rejects(nn.rename('/missing', '/x'), rejectsWith('ENOENT', '/missing'));
      await assert.rejects(nn.rename('/moved/f2', '/no/such/dir/f2'), rejectsWith('ENOENT', '/no/such/dir'));

      const again = await reopen();
      assert.equal((await again.stat('/moved/c/f1')).length, 1);
      await assert.rejects(again.stat('/a/b/c/f1'), rejectsWith('ENOENT'));
      // Renamed blocks keep their owner: the block report does not call them orphans.
      assert.deepEqual(again.registerDatanode(node('w1', 'r1'), deep), []);
    });
  });

  it('renameReplacing replaces a whole tree (or a file) in one step, and drops the old blocks', async () => {
    await withNamenode(async (nn, reopen) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      const old0 = await writeFile(nn, '/out/part-r-00000', [3]);
      const old1 = await writeFile(nn, '/out/part-r-00001', [4]);
      const oldMarker = await writeFile(nn, '/out/_SUCCESS', [0]);
      const fresh = await writeFile(nn, '/.out.overwrite-job_1/part-r-00000', [9]);
      await writeFile(nn, '/.out.overwrite-job_1/_SUCCESS', [0]);
      await nn.renameReplacing('/.out.overwrite-job_1', '/out');
      assert.deepEqual(
        (await nn.list('/out')).map((f) => [f.path, f.length]),
        [
          ['/out/_SUCCESS', 0],
          ['/out/part-r-00000', 9],
        ],
      );
      assert.deepEqual(
        (await nn.getBlocks('/out/part-r-00000')).map((b) => b.blockId),
        fresh,
      );
      await assert.rejects(nn.stat('/.out.overwrite-job_1'), rejectsWith('ENOENT'));
      // Onto nothing it is a rename; onto a file it replaces the file; never onto an ancestor.
      await writeFile(nn, '/staged/f', [1]);
      await nn.renameReplacing('/staged', '/new-out');
      assert.equal((await nn.stat('/new-out/f')).length, 1);
      await writeFile(nn, '/a-file', [2]);
      await writeFile(nn, '/staged2/g', [5]);
      await nn.renameReplacing('/staged2', '/a-file');
      assert.equal((await nn.stat('/a-file')).type, 'dir');
      await assert.rejects(nn.renameReplacing('/new-out/f', '/new-out'), rejectsWith('EBADPATH'));
      await assert.rejects(nn.renameReplacing('/new-out', '/new-out/f'), rejectsWith('EBADPATH'));

      const again = await reopen();
      assert.equal((await again.stat('/out/part-r-00000')).length, 9);
      await assert.rejects(again.stat('/out/part-r-00001'), rejectsWith('ENOENT'));
      // The replaced files' blocks are nobody's now: the block report has them deleted.
      const orphans = again.registerDatanode(node('w1', 'r1'), [...old0, ...old1, ...oldMarker, ...fresh]);
      assert.deepEqual(orphans.sort(), [...old0, ...old1, ...oldMarker].sort());
    });
  });

  it('renameReplacing needs the rights remove -r would need on the replaced tree', async () => {
    await withNamenode(async (nn) => {
      const alice = nn.callerFor('alice');
      const bob = nn.callerFor('bob');
      await nn.mkdir('/shared', { parents: true });
      await nn.chmod('/shared', '1777');
      await nn.mkdir('/shared/out', {}, alice);
      await nn.mkdir('/shared/staged', {}, bob);
      await assert.rejects(nn.checkReplaceable('/shared/out', bob), rejectsWith('EPERM'));
      await assert.rejects(nn.renameReplacing('/shared/staged', '/shared/out', bob), rejectsWith('EPERM'));
      assert.equal((await nn.stat('/shared/out')).owner, 'alice');
      await nn.checkReplaceable('/shared/out', alice);
      await nn.checkReplaceable('/shared/nothing-there', bob);
    });
  });

  it('remove needs recursive for a non-empty directory and schedules deletion of every replica', async () => {
    await withNamenode(async (nn) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      nn.registerDatanode(node('w2', 'r2'), []);
      await nn.mkdir('/d/e', { parents: true });
      const a = await writeFile(nn, '/d/a', [1, 1], { replication: 2 });
      const b = await writeFile(nn, '/d/e/b', [1], { replication: 1, writer: 'w2' });
      await assert.rejects(nn.remove('/d'), rejectsWith('ENOTEMPTY', '/d'));
      await assert.rejects(nn.remove('/'), rejectsWith('EBADPATH'));
      await nn.remove('/d', { recursive: true });
      await assert.rejects(nn.stat('/d'), rejectsWith('ENOENT'));
      assert.deepEqual(nn.takeBlockDeletions('w1').sort(), [...a].sort());
      assert.deepEqual(nn.takeBlockDeletions('w2').sort(), [...a, ...b].sort());
      assert.deepEqual(nn.takeBlockDeletions('w2'), [], 'deletions are handed out once');
    });
  });

  it('overwrite and abandon delete the old blocks', async () => {
    await withNamenode(async (nn) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      const old = await writeFile(nn, '/f', [3]);
      await nn.create('/f', { overwrite: true });
      const { blockId } = await nn.allocateBlock('/f');
      await nn.abandon('/f');
      await nn.abandon('/f');
      await assert.rejects(nn.stat('/f'), rejectsWith('ENOENT'));
      assert.deepEqual(nn.takeBlockDeletions('w1').sort(), [...old, blockId].sort());
    });
  });

  it('allocation needs at least one datanode and caps replication at the live count', async () => {
    await withNamenode(async (nn) => {
      await nn.create('/f', { replication: 3 });
      await assert.rejects(nn.allocateBlock('/f'), rejectsWith('ENOWORKERS', '/f'));
      nn.registerDatanode(node('w1', 'r1'), []);
      nn.registerDatanode(node('w2', 'r1'), []);
      const { targets } = await nn.allocateBlock('/f');
      assert.equal(targets.length, 2);
    });
  });

  it('getBlocks orders locations: the client, then its rack, then the rest', async () => {
    await withNamenode(async (nn) => {
      for (const [id, rack] of [
        ['w1', 'r1'],
        ['w2', 'r2'],
        ['w3', 'r2'],
        ['w4', 'r3'],
      ] as const)
        nn.registerDatanode(node(id, rack), []);
      await nn.create('/f', { replication: 4 });
      const { blockId } = await nn.allocateBlock('/f');
      await nn.commitBlock('/f', { blockId, length: 1, crc32: 0, workerIds: ['w1', 'w2', 'w3', 'w4'] });
      await nn.complete('/f');
      const order = async (client?: { workerId?: string; rack?: string }): Promise<string[]> =>
        (await nn.getBlocks('/f', client))[0]!.locations.map((l) => l.workerId);
      assert.deepEqual(await order({ workerId: 'w3', rack: 'r2' }), ['w3', 'w2', 'w1', 'w4']);
      assert.deepEqual(await order({ workerId: 'w4', rack: 'r3' }), ['w4', 'w1', 'w2', 'w3']);
      assert.deepEqual(await order({ rack: 'r2' }), ['w2', 'w3', 'w1', 'w4']);
      assert.deepEqual(await order(), ['w1', 'w2', 'w3', 'w4']);
    });
  });

  it('a lost datanode makes its blocks under-replicated and yields replication work for one holder', async () => {
    await withNamenode(async (nn) => {
      for (const [id, rack] of [
        ['w1', 'r1'],
        ['w2', 'r1'],
        ['w3', 'r2'],
        ['w4', 'r2'],
      ] as const)
        nn.registerDatanode(node(id, rack), []);
      await nn.create('/f', { replication: 2 });
      const { blockId } = await nn.allocateBlock('/f', { workerId: 'w1' });
      await nn.commitBlock('/f', { blockId, length: 1, crc32: 0, workerIds: ['w1', 'w3'] });
      await nn.complete('/f');
      assert.deepEqual(nn.underReplicatedBlocks(), []);
      nn.datanodeLost('w3');
      assert.deepEqual(nn.underReplicatedBlocks(), [blockId]);
      assert.deepEqual(
        (await nn.getBlocks('/f'))[0]!.locations.map((l) => l.workerId),
        ['w1'],
      );
      assert.deepEqual(nn.takeReplicationWork('w2'), [], 'w2 holds no replica');
      const work = nn.takeReplicationWork('w1');
      assert.equal(work.length, 1);
      assert.equal(work[0]!.blockId, blockId);
      // Off the surviving replica's rack, as HDFS's second replica.
      assert.deepEqual(
        work[0]!.targets.map((t) => t.workerId),
        ['w4'],
      );
      assert.deepEqual(nn.takeReplicationWork('w1'), [], 'in flight: not handed out twice');
      assert.equal(nn.blockReceived('w4', blockId), true);
      assert.deepEqual(nn.underReplicatedBlocks(), []);
      assert.equal(nn.blockReceived('w4', 'blk_unknown'), false);
      assert.deepEqual(nn.takeBlockDeletions('w4'), ['blk_unknown']);
    });
  });

  it('a datanode coming back after its blocks were re-replicated is told to delete its extra copy', async () => {
    await withNamenode(async (nn) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      nn.registerDatanode(node('w2', 'r2'), []);
      nn.registerDatanode(node('w3', 'r2'), []);
      const [blockId] = await writeFile(nn, '/f', [1], { replication: 2, writer: 'w1' });
      const other = (await nn.getBlocks('/f'))[0]!.locations.map((l) => l.workerId).find((w) => w !== 'w1')!;
      const spare = ['w2', 'w3'].find((w) => w !== other)!;
      nn.datanodeLost(other);
      const [work] = nn.takeReplicationWork('w1');
      assert.deepEqual(
        work!.targets.map((t) => t.workerId),
        [spare],
      );
      nn.blockReceived(spare, blockId!);
      assert.deepEqual(nn.registerDatanode(node(other, 'r2'), [blockId!]), []);
      assert.deepEqual(nn.takeBlockDeletions(other), [blockId]);
      assert.deepEqual((await nn.getBlocks('/f'))[0]!.locations.map((l) => l.workerId).sort(), ['w1', spare].sort());
    });
  });

  it('unconfirmed replication work is handed out again after the timeout', async () => {
    await withNamenode(async (nn) => {
      nn.registerDatanode(node('w1', 'r1'), []);
      nn.registerDatanode(node('w2', 'r1'), []);
      nn.registerDatanode(node('w3', 'r1'), []);
      const [blockId] = await writeFile(nn, '/f', [1], { replication: 2, writer: 'w1' });
      const holders = (await nn.getBlocks('/f'))[0]!.locations.map((l) => l.workerId);
      const lost = holders.find((w) => w !== 'w1')!;
      nn.datanodeLost(lost);
      const now = Date.now();
      assert.equal(nn.takeReplicationWork('w1', now).length, 1);
      assert.equal(nn.takeReplicationWork('w1', now + 1000).length, 0);
      // The target still sends heartbeats two minutes on (a silent one would be stale: no target).
      nn.datanodeHeartbeat('w3', undefined, now + 119_000);
      assert.deepEqual(
        nn.takeReplicationWork('w1', now + 120_000).map((w) => w.blockId),
        [blockId],
      );
    });
  });

  it(
    'a reported replica is verified by its datanode; one it finds ' + 'corrupt is forgotten and deleted there',
    async () => {
      await withNamenode(async (nn) => {
        nn.registerDatanode(node('w1', 'r1'), []);
        nn.registerDatanode(node('w2', 'r2'), []);
        const [blockId] = await writeFile(nn, '/f', [1], { replication: 2 });
        const [stored] = await nn.getBlocks('/f');
        // A reader's report of every replica removes none: each holder is asked to check its own.
        await nn.reportBadReplica(blockId!, 'w1');
        await nn.reportBadReplica(blockId!, 'w2');
        await nn.reportBadReplica(blockId!, 'w3');
        assert.deepEqual(
          (await nn.getBlocks('/f'))[0]!.locations.map((l) => l.workerId),
          ['w1', 'w2'],
        );
        assert.deepEqual(nn.takeBlockDeletions('w1'), []);
        assert.deepEqual(nn.takeBlockDeletions('w2'), []);
        assert.deepEqual(nn.takeVerifications('w1'), [{ blockId, length: stored!.length, crc32: stored!.crc32 }]);
        assert.deepEqual(nn.takeVerifications('w1'), [], 'handed out once');
        assert.deepEqual(nn.takeVerifications('w2'), [{ blockId, length: stored!.length, crc32: stored!.crc32 }]);
        // w1 found its replica good and says nothing; w2 found it corrupt.
        nn.replicaCorrupt('w2', blockId!);
        assert.deepEqual(
          (await nn.getBlocks('/f'))[0]!.locations.map((l) => l.workerId),
          ['w1'],
        );
        assert.deepEqual(nn.takeBlockDeletions('w2'), [blockId]);
        assert.deepEqual(nn.underReplicatedBlocks(), [blockId]);
      });
    },
  );
});

describe('placement', () => {
  const racks: PlacementNode[] = [
    { address: node('a1', 'rackA'), blockCount: 0 },
    { address: node('a2', 'rackA'), blockCount: 0 },
    { address: node('b1', 'rackB'), blockCount: 5 },
    { address: node('b2', 'rackB'), blockCount: 1 },
    { address: node('c1', 'rackC'), blockCount: 0 },
  ];
  const ids = (targets: DatanodeAddress[]): string[] => targets.map((t) => t.workerId);

  it('first replica on the writer, second off-rack, third on the second rack', () => {
    const targets = chooseTargets({ nodes: racks, count: 3, writer: { workerId: 'b1' } });
    assert.deepEqual(ids(targets), ['b1', 'a1', 'a2']);
    const [first, second, third] = targets;
    assert.notEqual(second!.rack, first!.rack);
    assert.equal(third!.rack, second!.rack);
    assert.notEqual(third!.workerId, second!.workerId);
  });

  it(
    'without a datanode writer: least loaded, ties by workerId; ' +
      'third falls back to an unused rack when the second rack has no ' +
      'other node',
    () => {
      assert.deepEqual(ids(chooseTargets({ nodes: racks, count: 3, writer: { rack: 'rackB' } })), ['a1', 'c1', 'b2']);
      assert.deepEqual(ids(chooseTargets({ nodes: [...racks].reverse(), count: 3 })), ['a1', 'c1', 'b2']);
    },
  );

  it('more replicas spread over the least used racks; never more than the nodes', () => {
    const five = chooseTargets({ nodes: racks, count: 5, writer: { workerId: 'a1' } });
    assert.deepEqual(ids(five), ['a1', 'c1', 'b2', 'a2', 'b1']);
    assert.equal(chooseTargets({ nodes: racks, count: 9 }).length, 5);
  });

  it('single rack: still distinct nodes', () => {
    const oneRack = racks.filter((n) => n.address.rack === 'rackA');
    assert.deepEqual(ids(chooseTargets({ nodes: oneRack, count: 3, writer: { workerId: 'a2' } })), ['a2', 'a1']);
  });

  it('sortByDistance is stable within each distance', () => {
    const list = [node('x', 'r2'), node('y', 'r1'), node('z', 'r2'), node('me', 'r1')];
    assert.deepEqual(ids(sortByDistance(list, { workerId: 'me', rack: 'r1' })), ['me', 'y', 'x', 'z']);
  });
});

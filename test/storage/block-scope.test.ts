import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isMinimrError, MinimrError } from '../../src/errors.js';
import { formatFsck, Namenode, type BlockScope, type DatanodeAddress } from '../../src/storage/index.js';
import { makeTempDir, silentLogger } from './helpers.js';

function node(workerId: string, rack: string): DatanodeAddress {
  return { workerId, host: '127.0.0.1', dataPort: 1, rack };
}

/** A scope like an MR-cluster's: /s/ blocks on w1 and w2 (and w3 when it writes them); /closed/ takes no writes. */
class RecordingScope implements BlockScope {
  readonly events: string[] = [];
  storers(path: string, writerId?: string): ReadonlySet<string> | undefined {
    if (!path.startsWith('/s/')) return undefined;
    return new Set(['w1', 'w2', ...(writerId === 'w3' ? ['w3'] : [])]);
  }
  mayHold(path: string, workerId: string): boolean {
    return !path.startsWith('/s/') || ['w1', 'w2', 'w3'].includes(workerId);
  }
  checkWritable(path: string): void {
    if (path.startsWith('/closed/')) throw new MinimrError('ENOMRCLUSTER', `${path}: closed`);
  }
  blockCommitted(path: string, blockId: string, _length: number, workerIds: readonly string[]): void {
    this.events.push(`committed ${path} ${blockId} ${workerIds.join(',')}`);
  }
  replicaAdded(path: string, blockId: string, workerId: string): void {
    this.events.push(`added ${path} ${blockId} ${workerId}`);
  }
  replicaRemoved(path: string, blockId: string, workerId: string): void {
    this.events.push(`removed ${path} ${blockId} ${workerId}`);
  }
  blockForgotten(path: string, blockId: string): void {
    this.events.push(`forgotten ${path} ${blockId}`);
  }
}

async function withScopedNamenode(test: (nn: Namenode, scope: RecordingScope) => Promise<void>): Promise<void> {
  const { dir, cleanup } = await makeTempDir();
  const nn = new Namenode({ dbPath: join(dir, 'nn'), logger: silentLogger, defaultReplication: 2 });
  await nn.open();
  const scope = new RecordingScope();
  nn.setScope(scope);
  for (const [id, rack] of [
    ['w1', 'r1'],
    ['w2', 'r2'],
    ['w3', 'r1'],
    ['w4', 'r2'],
  ] as const)
    nn.registerDatanode(node(id, rack), []);
  try {
    await test(nn, scope);
  } finally {
    await nn.close();
    await cleanup();
  }
}

async function writeOne(
  nn: Namenode,
  path: string,
  writer?: string,
  replication?: number,
): Promise<{ blockId: string; targets: string[] }> {
  await nn.create(path, replication !== undefined ? { replication } : {});
  const { blockId, targets } = await nn.allocateBlock(path, writer ? { workerId: writer } : undefined);
  const ids = targets.map((t) => t.workerId);
  await nn.commitBlock(path, { blockId, length: 100, crc32: 1, workerIds: ids });
  await nn.complete(path);
  return { blockId, targets: ids };
}

describe('NameNode block scopes (MR-cluster placement)', () => {
  it(
    "a scoped file's blocks go only to the nodes the scope names " + '(its writer first when named); others anywhere',
    async () => {
      await withScopedNamenode(async (nn, scope) => {
        assert.deepEqual(
          (await writeOne(nn, '/s/a', 'w4')).targets.sort(),
          ['w1', 'w2'],
          'w4 writes but may not store',
        );
        assert.deepEqual(
          (await writeOne(nn, '/s/b', 'w3')).targets,
          ['w3', 'w2'],
          'w3 stores what it writes: first, then off its rack',
        );
        assert.deepEqual((await writeOne(nn, '/free/c', 'w4')).targets, ['w4', 'w1']);
        assert.equal(scope.events.filter((e) => e.startsWith('committed')).length, 3);
        await assert.rejects(nn.create('/closed/x'), (e: unknown) => isMinimrError(e, 'ENOMRCLUSTER'));
      });
    },
  );

  it(
    're-replication stays in scope; a copy landing outside it is ' +
      'deleted; a node drops its scoped copies only while another ' +
      'remains',
    async () => {
      await withScopedNamenode(async (nn, scope) => {
        const { blockId } = await writeOne(nn, '/s/a', 'w3'); // w3, w2
        nn.datanodeLost('w2');
        assert.deepEqual(nn.underReplicatedBlocks(), [blockId]);
        // The smallest live holder (w3) copies, onto the scope's w1 only (w4 is nearer by load but out of scope).
        assert.deepEqual(
          nn.takeReplicationWork('w3').map((w) => [w.blockId, w.targets.map((t) => t.workerId)]),
          [[blockId, ['w1']]],
        );
        nn.blockReceived('w1', blockId);
        assert.ok(scope.events.includes(`added /s/a ${blockId} w1`));
        assert.equal(nn.blockReceived('w4', blockId), true);
        assert.deepEqual(nn.takeBlockDeletions('w4'), [blockId], 'a copy on w4 is not kept');
        nn.registerDatanode(node('w4', 'r2'), [blockId]);
        assert.deepEqual(nn.takeBlockDeletions('w4'), [blockId], 'nor one it reports when it comes back');
        assert.deepEqual((await nn.getBlocks('/s/a'))[0]!.locations.map((l) => l.workerId).sort(), ['w1', 'w3']);
        // w3 leaves: its copy goes, w1 keeps the block; w1 alone cannot drop the last replica.
        assert.deepEqual(
          nn.dropReplicas('w3', (p) => p.startsWith('/s/')),
          [],
        );
        assert.deepEqual(nn.takeBlockDeletions('w3'), [blockId]);
        assert.deepEqual(
          nn.dropReplicas('w1', (p) => p.startsWith('/s/')),
          [blockId],
        );
        assert.deepEqual(
          (await nn.getBlocks('/s/a'))[0]!.locations.map((l) => l.workerId),
          ['w1'],
        );
        await nn.remove('/s/a');
        assert.ok(scope.events.includes(`forgotten /s/a ${blockId}`));
      });
    },
  );

  it('fsck: files, blocks, live replicas, under-replicated and missing blocks', async () => {
    await withScopedNamenode(async (nn) => {
      const a = await writeOne(nn, '/d/a', 'w1', 2); // w1, w2
      const b = await writeOne(nn, '/d/b', 'w4', 1); // w4
      await nn.mkdir('/d/empty');
      const healthy = await nn.fsck('/d');
      assert.deepEqual(
        [healthy.files.length, healthy.directories, healthy.totalBlocks, healthy.totalBytes, healthy.totalReplicas],
        [2, 2, 2, 200, 3],
      );
      assert.equal(healthy.healthy, true);
      nn.datanodeLost('w4');
      nn.datanodeLost('w2');
      const report = await nn.fsck('/d');
      assert.equal(report.healthy, false);
      assert.deepEqual(report.missing, [{ path: '/d/b', blockId: b.blockId, length: 100 }]);
      assert.deepEqual(report.underReplicated, [{ path: '/d/a', blockId: a.blockId, replicas: 1, replication: 2 }]);
      assert.equal(report.liveDatanodes, 2);
      const text = formatFsck(report, true);
      assert.match(text, new RegExp(`/d/b: MISSING block ${b.blockId} len=100`));
      assert.match(text, /Status: CORRUPT/);
      assert.match(text, /Missing blocks:\t1\n/);
      assert.match(text, /Under-replicated blocks:\t1\n/);
      await assert.rejects(nn.fsck('/nope'), (e: unknown) => isMinimrError(e, 'ENOENT'));
    });
  });
});

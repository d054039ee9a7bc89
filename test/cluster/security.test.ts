/**
 * Issue 17, data ports and workers that cannot lie, against a real cluster (JobTracker here, three
 * worker processes on port 0): every attack is refused with a clear error and the cluster still
 * serves the right data and a right WordCount afterwards.
 */
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import type { AttemptSpec, Message, RegisterResult } from '../../src/runtime/wire/index.js';
import { connectPeer, type RpcPeer } from '../../src/runtime/wire/rpc-peer.js';
import {
  BLOCK_TOKEN_HEADER,
  BlockTokenKey,
  LocalDiskBlockStore,
  type BlockInfo,
  type DatanodeAddress,
} from '../../src/storage/index.js';
import { runMinimrBinary } from '../helpers/cli.js';
import {
  appModule,
  assertCountsEqual,
  makeText,
  readAll,
  readOutput,
  startTestCluster,
  waitFor,
  type TestCluster,
} from '../helpers/cluster.js';

function raw(
  node: DatanodeAddress,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ status: number; code: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: node.host, port: node.dataPort, method, path, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        let code = '';
        try {
          code = (JSON.parse(Buffer.concat(parts).toString()) as { code?: string }).code ?? '';
        } catch {
          // block bytes
        }
        resolve({ status: res.statusCode ?? 0, code });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The CLI against a test cluster, proving its secret. */
function cli(
  cluster: { url: string; jobTracker: { secretFile: string } },
  args: string[],
): Promise<{ code: number; stdout: Buffer; stderr: string }> {
  return runMinimrBinary([...args, '--jobtracker', cluster.url, '--secret-file', cluster.jobTracker.secretFile], {
    env: process.env,
  });
}

describe('a cluster whose data ports and workers cannot be abused', () => {
  let t: TestCluster;
  const text = makeText(200_000, 17);
  before(async () => {
    t = await startTestCluster({ workers: 3, replication: 2, blockSize: 64 * 1024 });
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(() => t.stop());

  const store = (workerId: string): LocalDiskBlockStore =>
    new LocalDiskBlockStore({ dir: join(t.dir, workerId, 'blocks'), workerId });
  const blocks = (): Promise<BlockInfo[]> => t.cluster.jobTracker.namenode.getBlocks('/in/text.txt');

  it(
    'block requests without a valid token are refused with 403 ' + 'ETOKEN; nothing is overwritten or deleted',
    async () => {
      const [block] = await blocks();
      const node = block!.locations[0]!;
      const path = `/blocks/${block!.blockId}`;
      const key = t.cluster.jobTracker.namenode.blockKey;
      const attempts: Array<[string, string, Record<string, string>]> = [
        ['read without token', 'GET', {}],
        [
          'read with a forged token',
          'GET',
          { [BLOCK_TOKEN_HEADER]: BlockTokenKey.generate().issue(block!.blockId, 'read', Date.now() + 60_000) },
        ],
        [
          'read with an expired token',
          'GET',
          { [BLOCK_TOKEN_HEADER]: key.issue(block!.blockId, 'read', Date.now() - 1000) },
        ],
        ['overwrite without token', 'PUT', {}],
        ['overwrite with a read token', 'PUT', { [BLOCK_TOKEN_HEADER]: block!.token }],
        ['delete with a read token', 'DELETE', { [BLOCK_TOKEN_HEADER]: block!.token }],
      ];
      for (const [what, method, headers] of attempts) {
        const answer = await raw(node, method, path, headers, method === 'PUT' ? Buffer.from('evil') : undefined);
        assert.deepEqual(answer, { status: 403, code: 'ETOKEN' }, what);
      }
      assert.equal(
        (await raw(node, 'GET', path, { [BLOCK_TOKEN_HEADER]: block!.token })).status,
        200,
        'the token the NameNode issued opens it',
      );
      assert.equal((await readAll(t.fs.cat('/in/text.txt'))).toString(), text);
    },
  );

  it('a relay to an unregistered host is refused, and the host gets nothing', async () => {
    let received = 0;
    const catcher = createServer((req, res) => {
      received++;
      req.resume();
      res.writeHead(200).end('{}');
    });
    await new Promise<void>((resolve) => catcher.listen(0, '127.0.0.1', resolve));
    try {
      const thief: DatanodeAddress = {
        workerId: 'worker-1',
        host: '127.0.0.1',
        dataPort: (catcher.address() as { port: number }).port,
        rack: '/rack-1',
      };
      const [block] = await blocks();
      const source = block!.locations[0]!;
      const registered = t.cluster.jobTracker.namenode.liveDatanodes().find((d) => d.workerId !== source.workerId)!;
      const body = Buffer.from(JSON.stringify({ targets: [thief] }));
      const headers = { 'content-type': 'application/json' };
      assert.deepEqual(await raw(source, 'POST', `/blocks/${block!.blockId}/replicate`, headers, body), {
        status: 403,
        code: 'ETOKEN',
      });
      const forOther = t.cluster.jobTracker.namenode.relayToken(block!.blockId, [registered]);
      assert.deepEqual(
        await raw(
          source,
          'POST',
          `/blocks/${block!.blockId}/replicate`,
          { ...headers, [BLOCK_TOKEN_HEADER]: forOther },
          body,
        ),
        { status: 403, code: 'ETOKEN' },
      );
      assert.throws(
        () => t.cluster.jobTracker.namenode.relayToken(block!.blockId, [thief]),
        (err) => isMinimrError(err, 'ETOKEN'),
      );
      assert.equal(received, 0);
    } finally {
      catcher.closeAllConnections();
      await new Promise<void>((resolve) => catcher.close(() => resolve()));
    }
  });

  it('a forged bad-replica report of every replica deletes none', async () => {
    const before = await blocks();
    const block = before[1]!;
    // As any client on the wire can.
    const client = await connectPeer(t.cluster.url, () => undefined);
    try {
      for (const l of block.locations)
        await client.request({ type: 'fs-reportBadReplica', blockId: block.blockId, workerId: l.workerId });
    } finally {
      client.close(1000, 'done');
    }
    // The holders check their replicas on the next heartbeats and find them good.
    await new Promise((r) => setTimeout(r, 1500));
    const afterwards = (await blocks())[1]!;
    assert.deepEqual(
      afterwards.locations.map((l) => l.workerId),
      block.locations.map((l) => l.workerId),
    );
    for (const l of block.locations)
      assert.equal(await store(l.workerId).has(block.blockId), true, `${l.workerId} still holds it`);
  });

  it(
    'fs cat prints the right data when one replica was tampered ' + 'with, and fails with ECHECKSUM when all were',
    async () => {
      const all = await blocks();
      const one = all[2]!;
      const bad = one.locations[0]!.workerId;
      const victimStore = store(bad);
      await victimStore.delete(one.blockId);
      await victimStore.write(one.blockId, Buffer.alloc(one.length, 0x21));
      const ok = await cli(t.cluster, ['fs', 'cat', '/in/text.txt']);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout.toString(), text);
      // Reported by the reader, confirmed by its own datanode: the bad replica goes, the block is copied again
      // (issue 34: never back to the worker deleting the bad copy). Judged on the disks: the block has its two
      // good replicas, on exactly the workers the NameNode lists, and no tampered copy is left anywhere.
      const workers = t.cluster.workers.map((w) => w.workerId);
      const repaired = await waitFor(
        'the block to have its two good replicas on disk, where the NameNode lists them',
        async () => {
          const b = (await blocks())[2]!;
          const good: string[] = [];
          for (const w of workers) {
            // A read that fails (the file replaced under it by the repair's copy) is not yet a good copy.
            const stored = await readAll(store(w).read(one.blockId)).catch(() => undefined);
            if (stored?.equals(Buffer.from(text).subarray(one.offset, one.offset + one.length))) good.push(w);
            else if (await store(w).has(one.blockId)) return undefined;
          }
          const listed = b.locations.map((l) => l.workerId).sort();
          return good.length === 2 && listed.join() === good.sort().join() ? b : undefined;
        },
        20_000,
      );
      assert.equal(repaired.blockId, one.blockId);

      const every = all[3]!;
      for (const l of every.locations) {
        const s = store(l.workerId);
        await s.delete(every.blockId);
        await s.write(every.blockId, Buffer.alloc(every.length, 0x22));
      }
      const failed = await cli(t.cluster, ['fs', 'cat', '/in/text.txt']);
      assert.equal(failed.code, 1);
      assert.match(failed.stderr, /ECHECKSUM/);
      await t.fs.remove('/in/text.txt');
      await t.fs.put(Buffer.from(text), '/in/text.txt');
    },
  );

  it(
    'a rogue worker (empty successes, a billion slots, an impostor ' + 'id) neither corrupts nor stalls a WordCount',
    async () => {
      const url = t.cluster.url;
      const register = async (peer: RpcPeer, workerId: string, mapSlots: number): Promise<RegisterResult> =>
        peer.request<RegisterResult>({
          type: 'register',
          worker: {
            workerId,
            host: '127.0.0.1',
            dataPort: 1,
            rack: '/rack-0',
            mapSlots,
            reduceSlots: 0,
            memoryMb: 8192,
            diskMBps: 0,
          },
          blockIds: [],
        });
      const launched: AttemptSpec[] = [];
      let rogue: RpcPeer | undefined;
      rogue = await connectPeer(url, (m: Message) => {
        if (m.type !== 'launch') return undefined;
        launched.push(m.attempt);
        // Claims every attempt succeeded at once, without doing or storing anything.
        rogue!.send({
          type: 'attempt-finished',
          workerId: 'rogue',
          attemptId: m.attempt.attemptId,
          state: 'succeeded',
          counters: {},
        });
        return undefined;
      });
      const greedy = await connectPeer(url, () => undefined);
      const impostor = await connectPeer(url, () => undefined);
      const heartbeat = setInterval(() => rogue!.send({ type: 'heartbeat', workerId: 'rogue', attempts: [] }), 100);
      try {
        await assert.rejects(
          register(greedy, 'greedy', 1e9),
          (err) => isMinimrError(err, 'EBADCONF') && /maximum/.test(err.message),
        );
        await assert.rejects(
          register(impostor, 'worker-0', 2),
          (err) => isMinimrError(err, 'EBADCONF') && /still connected/.test(err.message),
        );
        assert.ok(
          t.cluster.jobTracker.namenode.liveDatanodes().some((d) => d.workerId === 'worker-0' && d.dataPort !== 1),
          'the real worker-0 stays',
        );
        await register(rogue, 'rogue', 64);

        const status = await t.cluster.client.run(appModule('wordcount'), {
          input: ['/in/text.txt'],
          output: '/out/rogue',
          reducers: 2,
        });
        assert.equal(status.state, 'succeeded', status.error?.message);
        assertCountsEqual(await readOutput(t.fs, '/out/rogue'), text);
        assert.ok(launched.length > 0, 'the rogue was given maps, and its claims were refused');
      } finally {
        clearInterval(heartbeat);
        for (const peer of [rogue, greedy, impostor]) peer.close(1000, 'done');
      }
    },
  );
});

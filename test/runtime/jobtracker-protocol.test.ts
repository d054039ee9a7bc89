import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { pack } from 'msgpackr';
import { WebSocket } from 'ws';
import { MinimrError } from '../../src/errors.js';
import {
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  connectPeer,
  type JobClient,
  type JobTracker,
} from '../../src/runtime/index.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { startJobTracker, type LoneJobTracker } from '../helpers/jobtracker.js';

/** A raw socket, to send what no well-behaved peer would. */
async function rawSocket(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url);
  await once(ws, 'open');
  return ws;
}

async function closeCode(ws: WebSocket): Promise<{ code: number; reason: string }> {
  const [code, reason] = (await once(ws, 'close')) as [number, Buffer];
  return { code, reason: reason.toString() };
}

describe('JobTracker protocol endpoint (real server on port 0)', () => {
  let lone: LoneJobTracker;
  let jt: JobTracker;
  let client: JobClient;

  before(async () => {
    // Short expiries: a silent worker is suspect after 1 s and lost after 2.5 s (the defaults are minutes).
    lone = await startJobTracker(createPolicy('fifo'), 200, { taskExpiryMs: 1500, datanodeExpiryMs: 2500 });
    ({ jt, client } = lone);
  });

  after(() => lone.stop());

  async function stillServes(): Promise<void> {
    const info = await client.clusterInfo();
    assert.equal(info.policy, 'fifo');
  }

  it('closes a connection that sends a text frame with 1003, and keeps serving others', async () => {
    const ws = await rawSocket(jt.url);
    ws.send('hello');
    const { code, reason } = await closeCode(ws);
    assert.equal(code, 1003);
    assert.match(reason, /EPROTOCOL/);
    await stillServes();
  });

  it('closes a connection that sends garbage bytes with 1002', async () => {
    const ws = await rawSocket(jt.url);
    ws.send(Buffer.from([0xc1, 0xff, 0x00, 0x13]));
    const { code, reason } = await closeCode(ws);
    assert.equal(code, 1002);
    assert.match(reason, /EPROTOCOL/);
    await stillServes();
  });

  it('closes a connection that speaks another protocol version', async () => {
    const ws = await rawSocket(jt.url);
    ws.send(pack({ v: PROTOCOL_VERSION + 1, type: 'list-jobs', id: 1 }));
    const { code, reason } = await closeCode(ws);
    assert.equal(code, 1002);
    assert.match(reason, /EVERSION/);
    await stillServes();
  });

  it('closes a connection that sends an oversized frame (1009) without buffering it', async () => {
    const ws = await rawSocket(jt.url);
    ws.send(Buffer.alloc(MAX_FRAME_BYTES + 1024, 0x90));
    const { code } = await closeCode(ws);
    assert.equal(code, 1009);
    await stillServes();
  });

  it('answers a file system request with a wrong-typed argument with an error and keeps the connection', async () => {
    const peer = await connectPeer(jt.url, () => undefined);
    await assert.rejects(peer.request({ type: 'fs-remove', path: '/nothing', recursive: 'yes' }), (err: unknown) => {
      assert.ok(err instanceof MinimrError);
      assert.equal(err.code, 'EPROTOCOL');
      return true;
    });
    const jobs = await peer.request<unknown[]>({ type: 'list-jobs' });
    assert.deepEqual(jobs, []);
    peer.close();
  });

  it('answers a path of the wrong type in any file system frame with EBADPATH, not EINTERNAL', async () => {
    const peer = await connectPeer(jt.url, () => undefined);
    const calls: [string, Record<string, unknown>, string][] = [
      ['fs-stat', {}, 'path'],
      ['fs-list', {}, 'path'],
      ['fs-mkdir', { parents: true }, 'path'],
      ['fs-remove', {}, 'path'],
      ['fs-rename', { from: '/a' }, 'to'],
      ['fs-rename', { to: '/a' }, 'from'],
      ['fs-create', {}, 'path'],
      ['fs-getBlocks', {}, 'path'],
      ['fs-chmod', { mode: 0o644 }, 'path'],
      ['fsck', {}, 'path'],
    ];
    for (const [type, rest, field] of calls) {
      for (const wrong of [5, { toString: 'x' }, ['/a'], true, null]) {
        // The frame as msgpack carries it: what a hostile peer can send, whatever the client library does.
        await assert.rejects(peer.request({ type, ...rest, [field]: wrong }), (err: unknown) => {
          assert.ok(err instanceof MinimrError);
          assert.equal(err.code, 'EBADPATH', `${type} ${field}=${JSON.stringify(wrong)}: ${err.message}`);
          assert.match(err.message, new RegExp(`field "${field}"`));
          return true;
        });
      }
    }
    // Past HDFS's name limits, too: a 256-byte component, an 8,001-character path.
    for (const [path, limit] of [
      [`/${'x'.repeat(256)}`, /limit of 255/],
      [`/${'y'.repeat(8000)}`, /8000/],
    ] as const) {
      await assert.rejects(peer.request({ type: 'fs-mkdir', path, parents: true }), (err: unknown) => {
        assert.ok(err instanceof MinimrError);
        assert.equal(err.code, 'EBADPATH');
        assert.match(err.message, limit);
        return true;
      });
    }
    assert.deepEqual(await peer.request<unknown[]>({ type: 'list-jobs' }), []);
    peer.close();
  });

  it('refuses a registration with a hostile worker id', async () => {
    const peer = await connectPeer(jt.url, () => undefined);
    await assert.rejects(
      peer.request({
        type: 'register',
        worker: {
          workerId: '../../etc',
          host: 'x',
          dataPort: 1,
          rack: '/r',
          mapSlots: 1,
          reduceSlots: 1,
          memoryMb: 1,
          diskMBps: 0,
        },
        blockIds: [],
      }),
      /workerId/,
    );
    assert.equal((await client.clusterInfo()).workers.length, 0);
    peer.close();
  });

  it('answers status of an unknown job with ENOJOB', async () => {
    await assert.rejects(
      client.status('job_nope_0001'),
      (err: unknown) => err instanceof MinimrError && err.code === 'ENOJOB',
    );
  });

  it('rejects a malformed job submission with EBADJOB', async () => {
    const peer = await connectPeer(jt.url, () => undefined);
    await assert.rejects(
      peer.request({ type: 'submit-job', job: { name: 'x' } as never }),
      (err: unknown) => err instanceof MinimrError && err.code === 'EBADJOB',
    );
    peer.close();
  });

  it('a registered worker that stops heartbeating is suspect first, and lost past the datanode expiry', async () => {
    const peer = await connectPeer(jt.url, () => undefined);
    await peer.request({
      type: 'register',
      worker: {
        workerId: 'silent-worker',
        host: '127.0.0.1',
        dataPort: 9,
        rack: '/r',
        mapSlots: 1,
        reduceSlots: 1,
        memoryMb: 512,
        diskMBps: 0,
      },
      blockIds: [],
    });
    assert.equal((await client.clusterInfo()).workers.length, 1);
    const registered = Date.now();
    // heartbeatMs 200 -> suspect after 1000 ms of silence, still registered; lost past the datanode
    // expiry (2500 ms), when the JobTracker drops the socket.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    assert.equal(lone.jt.books.isSuspect('silent-worker'), true);
    assert.equal((await client.clusterInfo()).workers.length, 1, 'a suspect worker is not lost');
    await peer.closed;
    assert.ok(Date.now() - registered >= 2500, 'lost only past the datanode expiry');
    assert.equal((await client.clusterInfo()).workers.length, 0);
  });

  it("a worker id held by a connected, heartbeating worker is refused; a suspect one's may be taken", async () => {
    const registration = (peer: Awaited<ReturnType<typeof connectPeer>>, dataPort: number) =>
      peer.request({
        type: 'register',
        worker: {
          workerId: 'rebooted',
          host: '127.0.0.1',
          dataPort,
          rack: '/r',
          mapSlots: 1,
          reduceSlots: 1,
          memoryMb: 512,
          diskMBps: 0,
        },
        blockIds: [],
      });
    const old = await connectPeer(jt.url, () => undefined);
    await registration(old, 9);
    const newcomer = await connectPeer(jt.url, () => undefined);
    await assert.rejects(
      registration(newcomer, 10),
      (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && /still connected/.test(err.message),
    );
    // The old connection stays open but silent (a machine that rebooted without closing it): suspect after 1 s.
    await new Promise((resolve) => setTimeout(resolve, 1400));
    assert.equal(lone.jt.books.isSuspect('rebooted'), true);
    await registration(newcomer, 10);
    await old.closed;
    assert.deepEqual(
      lone.jt.namenode
        .liveDatanodes()
        .filter((d) => d.workerId === 'rebooted')
        .map((d) => d.dataPort),
      [10],
      'the newcomer holds the id',
    );
    newcomer.close();
  });
});

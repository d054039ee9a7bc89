import assert from 'node:assert/strict';
import { once } from 'node:events';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { createLogger } from '../../src/log.js';
import { JobClient, JobTracker } from '../../src/runtime/index.js';
import { createPolicy } from '../../src/scheduler/index.js';

const CAP = 8;

/** A connection that upgrades and then says nothing (never authenticates), from `localAddress`. */
async function idleConnection(url: string, localAddress: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { localAddress });
  await once(ws, 'open');
  return ws;
}

/** How an upgrade from `localAddress` is answered: 'open', or the HTTP status that refused it. */
async function tryUpgrade(url: string, localAddress: string): Promise<{ outcome: string; ws: WebSocket }> {
  const ws = new WebSocket(url, { localAddress });
  const outcome = await new Promise<string>((resolve) => {
    ws.once('open', () => resolve('open'));
    ws.once('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
    ws.once('error', (err) => resolve(`error: ${err.message}`));
  });
  return { outcome, ws };
}

describe('the JobTracker caps unauthenticated connections per address (real server on port 0)', () => {
  let dir: string;
  let jt: JobTracker;
  const held: WebSocket[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-conncap-'));
    jt = new JobTracker({
      dataDir: dir,
      port: 0,
      policy: createPolicy('fifo'),
      heartbeatMs: 200,
      logger: createLogger('jt', 'silent'),
      maxUnauthenticatedPerAddress: CAP,
      auditLog: join(dir, 'elsewhere', 'audit.jsonl'),
    });
    await jt.start();
  });
  after(async () => {
    for (const ws of held) ws.terminate();
    await jt.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses idle connections past the cap from one address at once; other addresses and proper clients still connect', async () => {
    // Idle sockets from 127.0.0.2 (loopback too): the address that hoards.
    for (let i = 0; i < CAP; i++) held.push(await idleConnection(jt.url, '127.0.0.2'));
    const started = Date.now();
    for (let i = 0; i < 20; i++) {
      const { outcome, ws } = await tryUpgrade(jt.url, '127.0.0.2');
      assert.equal(outcome, '429', `excess connection ${i}`);
      ws.terminate();
    }
    assert.ok(Date.now() - started < 5000, 'refused at once, not after a timeout');
    // A proper client from another address connects and is served.
    const client = await JobClient.connect(jt.url);
    assert.equal((await client.clusterInfo()).policy, 'fifo');
    // Authenticated connections do not count: more than the cap of them from 127.0.0.1, all served.
    const clients = [client];
    for (let i = 0; i < CAP + 4; i++) clients.push(await JobClient.connect(jt.url));
    for (const c of clients) assert.equal((await c.clusterInfo()).policy, 'fifo');
    // With 127.0.0.1's own share held idle, its authenticated clients keep working.
    const local: WebSocket[] = [];
    for (let i = 0; i < CAP; i++) local.push(await idleConnection(jt.url, '127.0.0.1'));
    assert.equal((await tryUpgrade(jt.url, '127.0.0.1')).outcome, '429');
    assert.equal((await clients[0]!.clusterInfo()).policy, 'fifo');
    for (const c of clients) c.close();
    // An idle connection that goes frees its place.
    local[0]!.close();
    await once(local[0]!, 'close');
    const again = await JobClient.connect(jt.url);
    again.close();
    held.push(...local.slice(1));
  });

  it('writes the audit log where the option says; with auditLog false, none', async () => {
    const client = await JobClient.connect(jt.url);
    await client.fs.mkdir('/relocated');
    client.close();
    const file = join(dir, 'elsewhere', 'audit.jsonl');
    let text = '';
    for (let i = 0; i < 100 && !text.includes('/relocated'); i++) {
      text = await readFile(file, 'utf8').catch(() => '');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.match(text, /"operation":"fs-mkdir","path":"\/relocated","result":"allowed"/);
    await assert.rejects(access(join(dir, 'audit.log')));

    const quietDir = await mkdtemp(join(tmpdir(), 'minimr-noaudit-'));
    const quiet = new JobTracker({
      dataDir: quietDir,
      port: 0,
      policy: createPolicy('fifo'),
      logger: createLogger('jt', 'silent'),
      auditLog: false,
    });
    await quiet.start();
    try {
      const c = await JobClient.connect(quiet.url);
      await c.fs.mkdir('/quiet');
      c.close();
    } finally {
      await quiet.stop();
    }
    await assert.rejects(access(join(quietDir, 'audit.log')));
    await rm(quietDir, { recursive: true, force: true });
  });
});

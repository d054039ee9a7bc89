import assert from 'node:assert/strict';
import { once } from 'node:events';
import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pack, unpack } from 'msgpackr';
import { WebSocketServer, type WebSocket } from 'ws';
import { createLogger } from '../../src/log.js';
import {
  PROTOCOL_VERSION,
  acceptPeer,
  connectPeer,
  loadOrCreateSecret,
  readSecretFile,
} from '../../src/runtime/wire/index.js';
import { isCode } from '../helpers/cluster.js';

const SECRET = Buffer.from('0123456789abcdef0123456789abcdef');
const credentials = { user: 'alice', secret: SECRET };

/** A WebSocket server on port 0 that hands each connection to `onSocket`. */
async function server(onSocket: (socket: WebSocket) => void): Promise<{ url: string; close(): Promise<void> }> {
  const http = createServer();
  const wss = new WebSocketServer({ server: http });
  wss.on('connection', onSocket);
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const address = http.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `ws://127.0.0.1:${port}`,
    async close() {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

describe('authentication of protocol connections', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-auth-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('generates a private secret once and reads it back; refuses short or exposed secret files', async () => {
    const path = join(dir, 'jt', 'secret');
    const first = await loadOrCreateSecret(path);
    assert.match(first.toString(), /^[0-9a-f]{64}$/);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.deepEqual(await loadOrCreateSecret(path), first, 'an existing secret is kept');
    const short = join(dir, 'short');
    await writeFile(short, 'tooshort\n', { mode: 0o600 });
    await assert.rejects(readSecretFile(short), isCode('EBADCONF', /at least 16/));
    await chmod(path, 0o640);
    await assert.rejects(readSecretFile(path), isCode('EBADCONF', /chmod 600/));
    await assert.rejects(
      readSecretFile(join(dir, 'missing')),
      isCode('EBADCONF', /cannot read the cluster secret file/),
    );
  });

  it('does not trust a server that cannot prove it knows the secret (an impostor JobTracker)', async () => {
    const impostor = await server((socket) => {
      socket.send(pack({ v: PROTOCOL_VERSION, type: 'hello', nonce: 'ab'.repeat(32) }));
      socket.on('message', (data: Buffer) => {
        const request = unpack(data) as { id: number };
        socket.send(
          pack({
            v: PROTOCOL_VERSION,
            type: 'reply',
            re: request.id,
            ok: true,
            result: { proof: '00'.repeat(32), user: 'alice' },
          }),
        );
      });
    });
    try {
      await assert.rejects(
        connectPeer(impostor.url, () => undefined, undefined, 5000, { credentials }),
        isCode('EAUTH', /did not prove it knows the cluster secret/),
      );
    } finally {
      await impostor.close();
    }
  });

  it(
    'authenticates with the right secret and answers an internal ' +
      'fault with EINTERNAL and a reference, not its text',
    async () => {
      const logged: string[] = [];
      const logger = createLogger('auth-test', 'error');
      const real = await server((socket) =>
        acceptPeer(
          socket,
          { secret: SECRET, userKey: () => undefined },
          (message, peer) => {
            if (message.type === 'list-jobs')
              throw new Error(`ENOENT: no such file, open '/var/lib/minimr/${peer.user}/secret-file'`);
            return [];
          },
          Object.assign(Object.create(logger) as typeof logger, {
            error: (o: object) => logged.push(JSON.stringify(o)),
          }),
        ),
      );
      try {
        await assert.rejects(
          connectPeer(real.url, () => undefined, undefined, 5000, {
            credentials: { user: 'alice', secret: Buffer.from('another-secret-of-some-length') },
          }),
          isCode('EAUTH', /wrong cluster secret/),
        );
        const peer = await connectPeer(real.url, () => undefined, undefined, 5000, { credentials });
        const fault = await peer.request({ type: 'list-jobs' }).catch((err: unknown) => err);
        assert.ok(fault instanceof Error);
        assert.equal((fault as { code?: string }).code, 'EINTERNAL');
        assert.doesNotMatch(fault.message, /var\/lib|secret-file/);
        const reference = /reference ([0-9a-f]{8})/.exec(fault.message)?.[1];
        assert.ok(reference, fault.message);
        assert.ok(
          logged.some((line) => line.includes(reference) && line.includes('/var/lib/minimr/alice/secret-file')),
          'the whole error is in the server log',
        );
        peer.close();
      } finally {
        await real.close();
      }
    },
  );
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { createLogger } from '../../src/log.js';
import { readSecretFile } from '../../src/runtime/wire/index.js';
import { JobClient, JobTracker } from '../../src/runtime/index.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { isCode } from '../helpers/cluster.js';

const execFileP = promisify(execFile);

// The TLS case of test/runtime/auth.test.ts, here because it runs `openssl` to make its certificate.
describe('authentication of protocol connections', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-auth-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('serves wss:// with --tls-cert/--tls-key; a client trusts it with the CA given, and not without', async (t) => {
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    try {
      await execFileP('openssl', [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ]);
    } catch {
      t.skip('openssl is not available to make a test certificate');
      return;
    }
    const jt = new JobTracker({
      dataDir: join(dir, 'tls-jt'),
      port: 0,
      policy: createPolicy('fifo'),
      logger: createLogger('jt', 'silent'),
      tls: { cert: await readFile(cert), key: await readFile(key) },
    });
    await jt.start();
    try {
      assert.match(jt.url, /^wss:\/\/127\.0\.0\.1:\d+$/);
      const secret = await readSecretFile(jt.secretFile);
      await assert.rejects(
        JobClient.connect(jt.url, { security: { credentials: { user: 'alice', secret } } }),
        isCode('ECONNECT', /self-signed|certificate/),
      );
      const client = await JobClient.connect(jt.url, {
        security: { credentials: { user: 'alice', secret }, tlsCa: await readFile(cert) },
      });
      assert.deepEqual(await client.list(), []);
      client.close();
    } finally {
      await jt.stop();
    }
  });
});

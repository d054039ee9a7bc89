import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { Writable } from 'node:stream';
import pino from 'pino';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { createLogger } from '../../src/log.js';
import { certificateFingerprint, parseJoinToken, readSecretFile } from '../../src/runtime/wire/index.js';
import { JobClient, JobTracker, Worker } from '../../src/runtime/index.js';
import { BLOCK_TOKEN_HEADER, trustClusterAuthority } from '../../src/storage/index.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { createWebHdfsStore } from '../../src/storage/stores/index.js';
import { cliEnv, runMinimr } from '../helpers/cli.js';
import { isCode, readAll, waitFor } from '../helpers/cluster.js';

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

/** GET over HTTPS trusting `ca` only: status and body, or the connection's error. */
function httpsStatus(port: number, path: string, ca: Buffer | undefined, headers: Record<string, string> = {}) {
  return new Promise<string>((resolve) => {
    httpsGet({ host: '127.0.0.1', port, path, headers, ...(ca ? { ca } : {}) }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(`${res.statusCode} ${body}`));
    }).on('error', (e) => resolve(`error ${e.message}`));
  });
}

// TLS by default (issue 34): a JobTracker listening beyond loopback makes its own authority.
describe('TLS by default beyond loopback', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-tls-default-'));
  });
  after(async () => {
    trustClusterAuthority(undefined);
    await rm(dir, { recursive: true, force: true });
  });

  const logger = createLogger('tls', 'silent');

  it(
    'makes the authority once (keys 0600), serves wss://, certifies a pinned worker whose data port then ' +
      'serves HTTPS only, and rolls block keys to the workers',
    async () => {
      const jtDir = join(dir, 'jt');
      const options = {
        dataDir: jtDir,
        host: '0.0.0.0',
        port: 0,
        policy: createPolicy('fifo'),
        logger,
        heartbeatMs: 200,
        blockKeyRollMs: 400,
      };
      let jt = new JobTracker(options);
      await jt.start();
      const fingerprint = certificateFingerprint(await readFile(join(jtDir, 'ca.pem')));
      const serverCert = await readFile(join(jtDir, 'tls-cert.pem'));
      assert.match(jt.url, /^wss:\/\/0\.0\.0\.0:\d+$/);
      for (const key of ['ca-key.pem', 'tls-key.pem'])
        assert.equal((await stat(join(jtDir, key))).mode & 0o777, 0o600, key);
      // Started again: the same authority and certificate.
      await jt.stop();
      jt = new JobTracker(options);
      await jt.start();
      let worker: Worker | undefined;
      try {
        assert.equal(certificateFingerprint(await readFile(join(jtDir, 'ca.pem'))), fingerprint);
        assert.deepEqual(await readFile(join(jtDir, 'tls-cert.pem')), serverCert);
        const url = `wss://127.0.0.1:${jt.port}`;
        const secret = await readSecretFile(jt.secretFile);
        const credentials = { user: 'alice', secret };
        await assert.rejects(JobClient.connect(url, { security: { credentials } }), isCode('ECONNECT', /certificate/));
        await assert.rejects(
          JobClient.connect(url, { security: { credentials, tlsPin: 'ab'.repeat(32) } }),
          isCode('EAUTH', /does not match the pinned authority/),
        );
        const wrongPinWorker = new Worker({
          jobTrackerUrl: url,
          dataDir: join(dir, 'w0'),
          host: '127.0.0.1',
          diskMBps: 100,
          security: { credentials, tlsPin: 'cd'.repeat(32) },
          logger,
        });
        await assert.rejects(wrongPinWorker.start(), isCode('EAUTH', /does not match the pinned authority/));
        await wrongPinWorker.stop();

        worker = new Worker({
          jobTrackerUrl: url,
          dataDir: join(dir, 'w1'),
          host: '127.0.0.1',
          diskMBps: 100,
          security: { credentials, tlsPin: fingerprint },
          logger,
        });
        await worker.start();
        const ca = await readFile(join(dir, 'w1', 'cluster-ca.pem'));
        assert.equal(certificateFingerprint(ca), fingerprint);
        // The data port: HTTPS with a certificate from the authority for the worker's host; plain HTTP gets nothing.
        const peer = await new Promise<X509Certificate>((resolve, reject) => {
          httpsGet({ host: '127.0.0.1', port: worker!.dataPort, path: '/blocks/blk_1', ca }, (res) => {
            resolve(new X509Certificate((res.socket as import('node:tls').TLSSocket).getPeerCertificate().raw));
            res.resume();
          }).on('error', reject);
        });
        assert.ok(peer.checkIssued(new X509Certificate(ca)));
        assert.equal(peer.checkIP('127.0.0.1'), '127.0.0.1');
        assert.match(await httpsStatus(worker.dataPort, '/blocks/blk_1', undefined), /^error .*certificate/);
        const plain = await new Promise<string>((resolve) =>
          httpGet({ host: '127.0.0.1', port: worker!.dataPort, path: '/blocks/blk_1' }, (res) =>
            resolve(`status ${res.statusCode}`),
          ).on('error', (e) => resolve(`error ${e.message}`)),
        );
        assert.match(plain, /^error /);

        // A file written and read back through the HTTPS data port (this process trusts the JobTracker's authority).
        const client = await JobClient.connect(url, { security: { credentials, tlsPin: fingerprint } });
        try {
          await client.fs.put(Buffer.from('hello over https\n'), '/hello.txt', { replication: 1 });
          assert.equal((await readAll(client.fs.cat('/hello.txt'))).toString(), 'hello over https\n');
        } finally {
          client.close();
        }

        // WebHDFS on the same port: https, its redirect https too; curl trusts the authority it is given.
        const caFile = join(jtDir, 'ca.pem');
        const webhdfs = `https://127.0.0.1:${jt.port}/webhdfs/v1/hello.txt?op=OPEN`;
        const basic = `alice:${jt.webPassword}`;
        const step1 = await execFileP('curl', [
          '-sS',
          '--cacert',
          caFile,
          '-u',
          basic,
          '-o',
          '/dev/null',
          '-D',
          '-',
          webhdfs,
        ]);
        assert.match(step1.stdout, /^location: https:\/\/127\.0\.0\.1:\d+\/webhdfs\/v1\/hello\.txt\?/im);
        const read = await execFileP('curl', ['-sS', '-L', '--cacert', caFile, '-u', basic, webhdfs]);
        assert.equal(read.stdout, 'hello over https\n');
        const store = createWebHdfsStore(`127.0.0.1:${jt.port}`, {
          'webhdfs.tls': 'true',
          'webhdfs.ca': caFile,
          'webhdfs.user': 'alice',
          'webhdfs.password': jt.webPassword,
        });
        const fromStore = await readAll(store.readRange(`webhdfs://127.0.0.1:${jt.port}/hello.txt`, 6, 100));
        assert.equal(fromStore.toString(), 'over https\n');
        const written = await store.create(`webhdfs://127.0.0.1:${jt.port}/written.txt`);
        await written.write(Buffer.from('through a worker over https\n'));
        await written.close();
        const readBack = await JobClient.connect(url, { security: { credentials, tlsPin: fingerprint } });
        try {
          assert.equal((await readAll(readBack.fs.cat('/written.txt'))).toString(), 'through a worker over https\n');
        } finally {
          readBack.close();
        }

        // The operator's tools join with the daemon token; a user joins with a token of their own
        // credential (`minimr join-token --credential`), as that user and no other.
        const minimr = (args: string[]) => runMinimr(args, { env: cliEnv({ HOME: join(dir, 'home') }) });
        const daemonToken = (await minimr(['join-token', '--dir', jtDir, '--url', url])).stdout.trim();
        const credentialFile = join(dir, 'bob.credential');
        const added = await minimr(['user', 'add', 'bob', '--out', credentialFile, '--join-token', daemonToken]);
        assert.equal(added.code, 0, added.stderr);
        const bobToken = (
          await minimr(['join-token', '--dir', jtDir, '--url', url, '--credential', credentialFile])
        ).stdout.trim();
        assert.equal(parseJoinToken(bobToken).user, 'bob');
        assert.equal(parseJoinToken(bobToken).secret, undefined, "bob's token does not hold the cluster secret");
        const listed = await minimr(['fs', 'ls', '/', '--join-token', bobToken]);
        assert.equal(listed.code, 0, listed.stderr);
        assert.match(listed.stdout, /\/hello\.txt$/m);
        const asRoot = await minimr(['fs', 'ls', '/', '--join-token', bobToken, '--user', 'root']);
        assert.equal(asRoot.code, 1);
        assert.match(
          asRoot.stderr,
          /^minimr: EAUTH: the join token holds user bob's credential: it cannot act as root/m,
        );

        // Block keys roll: a token under a key two rolls old is refused, a fresh one accepted
        // (the worker got the keys).
        const blockId = 'blk_1';
        const old = jt.namenode.blockKey.issue(blockId, 'read', Date.now() + 60_000);
        const firstKey = jt.namenode.blockKey.currentKeyId;
        await waitFor('two key rolls', () => (jt.namenode.blockKey.currentKeyId >= firstKey + 2 ? true : undefined));
        await waitFor('the worker to refuse the old key', async () => {
          const r = await httpsStatus(worker!.dataPort, `/blocks/${blockId}`, ca, { [BLOCK_TOKEN_HEADER]: old });
          return /no longer/.test(r) ? r : undefined;
        });
        const fresh = jt.namenode.blockKey.issue(blockId, 'read', Date.now() + 60_000);
        const r = await httpsStatus(worker.dataPort, `/blocks/${blockId}`, ca, { [BLOCK_TOKEN_HEADER]: fresh });
        // The token is accepted: whatever the block holds, the answer is not a token error.
        assert.doesNotMatch(r, /ETOKEN/);
      } finally {
        await worker?.stop();
        await jt.stop();
      }
    },
  );

  it('stays plain text beyond loopback only with insecurePlaintext, and warns at start', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const jt = new JobTracker({
      dataDir: join(dir, 'plain'),
      host: '0.0.0.0',
      port: 0,
      policy: createPolicy('fifo'),
      logger: pino({ level: 'warn' }, sink),
      insecurePlaintext: true,
    });
    await jt.start();
    try {
      assert.match(jt.url, /^ws:\/\//);
      assert.match(lines.join(''), /insecure-plaintext.*clear text/);
      await assert.rejects(stat(join(dir, 'plain', 'ca.pem')), /ENOENT/);
    } finally {
      await jt.stop();
    }
  });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { makeText, parseCounts, referenceWordCount } from '../helpers/cluster.js';
import { MINIMR_BIN as BIN } from '../helpers/cli.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../../cluster/netns-cluster.sh', import.meta.url));
const ENSURE_TOOL = fileURLToPath(new URL('../../../scripts/ensure-tool.sh', import.meta.url));
const APPS = fileURLToPath(new URL('../../apps/', import.meta.url));

async function netnsAvailable(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root to create network namespaces';
  try {
    await run('ip', ['netns', 'list']);
  } catch {
    return 'iproute2 (`ip netns`) is not available';
  }
  try {
    // The captures below need tcpdump: installed with apt-get when missing.
    await run('sh', [ENSURE_TOOL, 'tcpdump'], { timeout: 300_000 });
  } catch (err) {
    return `tcpdump is not available to capture a worker's link: ${(err as { stderr?: string }).stderr ?? err}`;
  }
  return undefined;
}

/** The protocol's field names that carry the block key and a job's shuffle secret (msgpack keeps them as text). */
const KEY_FIELDS = ['blockKey', 'shuffleSecret'];

function found(capture: Buffer, needles: readonly string[]): string[] {
  return needles.filter((n) => capture.includes(Buffer.from(n, 'utf8')));
}

/** `minimr job list` on another host (namespace `ns`) with `env`, its exit code and stderr. */
async function clientOn(
  ns: string,
  env: NodeJS.ProcessEnv,
  extra: string[],
): Promise<{ code: number; stderr: string }> {
  return run('ip', ['netns', 'exec', ns, process.execPath, BIN, 'job', 'list', ...extra], { env }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
}

function joinToken(fields: Record<string, string>): string {
  return `minimr-join-1.${Buffer.from(JSON.stringify(fields)).toString('base64url')}`;
}

/**
 * A cluster of separate network hosts: JobTracker and three workers each in a network namespace of
 * its own, talking over a bridge, driven by cluster/netns-cluster.sh exactly as a user would. It is
 * TLS (the JobTracker listens beyond loopback), and workers join with the join token.
 */
describe('a cluster of several hosts (network namespaces)', () => {
  it(
    'is TLS: a capture of a worker link while it registers and runs a job holds neither the block key nor a ' +
      'shuffle secret; strangers, a wrong secret and a wrong pin are refused; a block read without a token ' +
      'fails; WordCount across hosts is right',
    async (t) => {
      const why = await netnsAvailable();
      if (why) {
        t.skip(why);
        return;
      }
      const prefix = `mrt${process.pid % 10000}`;
      const state = join(tmpdir(), `minimr-netns-${prefix}`);
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        MINIMR_NETNS_PREFIX: prefix,
        MINIMR_NETNS_STATE: state,
        MINIMR_NETNS_CAPTURE: 'w1',
        MINIMR_LOG_LEVEL: 'warn',
      };
      delete env.MINIMR_SECRET_FILE;
      delete env.MINIMR_JOIN_TOKEN;
      const dir = await mkdtemp(join(tmpdir(), 'minimr-netns-'));
      const text = makeText(900_000, 21);
      await writeFile(join(dir, 'in.txt'), text);
      try {
        await run('bash', [SCRIPT, 'up', '3'], { env });
        const { stdout: info } = await run('bash', [SCRIPT, 'info'], { env });
        const workers = info
          .trim()
          .split('\n')
          .map((l) => l.split(' '))
          .map(([, id, host, , port]) => ({ id: id!, host: host!, dataPort: Number(port) }));
        assert.deepEqual(workers.map((w) => w.host).sort(), ['10.77.0.11', '10.77.0.12', '10.77.0.13']);
        const { stdout: tokenText } = await run('bash', [SCRIPT, 'token'], { env });
        const token = JSON.parse(
          Buffer.from(tokenText.trim().slice('minimr-join-1.'.length), 'base64url').toString('utf8'),
        ) as { url: string; ca: string; secret: string };
        assert.equal(token.url, 'wss://10.77.0.1:7700');
        assert.match(token.ca, /^[0-9a-f]{64}$/);

        // Clients on another host (their own home: no pointer to this machine's secret file).
        const strangerEnv: NodeJS.ProcessEnv = { ...env, HOME: join(dir, 'stranger') };
        const ns = `${prefix}-w1`;
        // Without the authority, TLS itself refuses (the cluster's certificate is not trusted).
        let r = await clientOn(ns, strangerEnv, ['--jobtracker', token.url]);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /ECONNECT.*certificate/);
        // The right authority but a wrong secret: EAUTH.
        r = await clientOn(ns, strangerEnv, ['--join-token', joinToken({ ...token, secret: 'f'.repeat(64) })]);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /EAUTH/);
        // The right secret but another pin: refused before the secret is used, saying why.
        r = await clientOn(ns, strangerEnv, ['--join-token', joinToken({ ...token, ca: '0'.repeat(64) })]);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /EAUTH.*does not match the pinned authority/);
        // And the right token works from another host.
        r = await clientOn(ns, strangerEnv, ['--join-token', tokenText.trim()]);
        assert.equal(r.code, 0, r.stderr);

        await run('bash', [SCRIPT, 'run', 'fs', 'put', join(dir, 'in.txt'), '/in/text.txt'], { env });
        await run(
          'bash',
          [
            SCRIPT,
            'run',
            'submit',
            join(APPS, 'wordcount.js'),
            '--input',
            '/in/text.txt',
            '--output',
            '/out/wc',
            '--reducers',
            '3',
          ],
          { env },
        );
        const { stdout } = await run('bash', [SCRIPT, 'run', 'fs', 'cat', '/out/wc'], {
          env,
          maxBuffer: 64 * 1024 * 1024,
        });
        const got = parseCounts(stdout);
        const want = referenceWordCount(text);
        assert.equal(got.size, want.size);
        for (const [w, n] of want) assert.equal(got.get(w), n, w);

        // The captured worker registered (block key) and ran attempts of the job (shuffle secret)...
        assert.ok((await readdir(join(state, 'w1', 'logs'))).length > 0, 'w1 ran attempts of the job');
        await run('bash', [SCRIPT, 'stop-capture'], { env });
        const capture = await readFile(join(state, 'w1.pcap'));
        assert.ok(capture.length > 20_000, `the capture holds the link's traffic (${capture.length} bytes)`);
        // ... and nothing of it is readable on the wire: no key field, no secret.
        assert.deepEqual(found(capture, [...KEY_FIELDS, token.secret, 'attempt-finished', 'blk_']), []);

        // A block read from another host without a token (or with a forged one) is refused by the data port.
        const w1 = workers.find((w) => w.id === 'w1')!;
        const blockId = (await readdir(join(state, 'w1', 'blocks'))).find((f) => f.endsWith('.blk'))!.slice(0, -4);
        const probe = `
          const https = require('node:https');
          const ca = require('node:fs').readFileSync(${JSON.stringify(join(state, 'jt', 'ca.pem'))});
          const get = (headers) => new Promise((resolve) => {
            https.get({ host: '${w1.host}', port: ${w1.dataPort}, path: '/blocks/${blockId}', ca, headers }, (res) => {
              let body = ''; res.on('data', (c) => (body += c)); res.on('end', () => resolve(res.statusCode + ' ' + body));
            }).on('error', (e) => resolve('error ' + e.message));
          });
          (async () => {
            console.log(await get({}));
            console.log(await get({ 'x-minimr-block-token': '7.99999999999999.' + 'A'.repeat(43) }));
          })();`;
        const { stdout: probed } = await run('ip', ['netns', 'exec', `${prefix}-w2`, process.execPath, '-e', probe]);
        const [noToken, forged] = probed.trim().split('\n');
        assert.match(noToken!, /^403 .*"ETOKEN".*needs a block access token/);
        assert.match(forged!, /^403 .*"ETOKEN"/);
        // Plain HTTP gets nothing from a TLS data port.
        const plainProbe = `require('node:http').get('http://${w1.host}:${w1.dataPort}/blocks/${blockId}',
          (res) => console.log('status', res.statusCode)).on('error', (e) => console.log('error', e.code))`;
        const { stdout: plain } = await run('ip', [
          'netns',
          'exec',
          `${prefix}-w2`,
          process.execPath,
          '-e',
          plainProbe,
        ]);
        assert.match(plain, /^error /);
      } finally {
        await run('bash', [SCRIPT, 'down'], { env }).catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      }
    },
  );

  it('with --insecure-plaintext, the same capture does hold the block key and the shuffle secret', async (t) => {
    // The control of the test above: the capture and the search find the keys when they do cross in clear text.
    const why = await netnsAvailable();
    if (why) {
      t.skip(why);
      return;
    }
    const prefix = `mrp${process.pid % 10000}`;
    const state = join(tmpdir(), `minimr-netns-${prefix}`);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      MINIMR_NETNS_PREFIX: prefix,
      MINIMR_NETNS_STATE: state,
      MINIMR_NETNS_SUBNET: '10.79.0',
      MINIMR_NETNS_CAPTURE: 'w1',
      MINIMR_NETNS_PLAINTEXT: '1',
      MINIMR_LOG_LEVEL: 'warn',
    };
    delete env.MINIMR_SECRET_FILE;
    delete env.MINIMR_JOIN_TOKEN;
    const dir = await mkdtemp(join(tmpdir(), 'minimr-netns-'));
    try {
      await writeFile(join(dir, 'in.txt'), makeText(50_000, 5));
      await run('bash', [SCRIPT, 'up', '1'], { env });
      assert.match(await readFile(join(state, 'jt.log'), 'utf8'), /insecure-plaintext.*clear text/);
      await run('bash', [SCRIPT, 'run', 'fs', 'put', join(dir, 'in.txt'), '/in/t.txt'], { env });
      await run(
        'bash',
        [SCRIPT, 'run', 'submit', join(APPS, 'wordcount.js'), '--input', '/in/t.txt', '--output', '/o'],
        {
          env,
        },
      );
      await run('bash', [SCRIPT, 'stop-capture'], { env });
      const capture = await readFile(join(state, 'w1.pcap'));
      // The registration reply carries the block key in every run; a launch frame's shuffle secret may be
      // split across TCP segments, so only the key is required here.
      assert.ok(found(capture, KEY_FIELDS).includes('blockKey'), 'the block key is readable in a plain-text capture');
    } finally {
      await run('bash', [SCRIPT, 'down'], { env }).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { makeText, parseCounts, referenceWordCount } from '../helpers/cluster.js';
import { MINIMR_BIN as BIN } from '../helpers/cli.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../../cluster/netns-cluster.sh', import.meta.url));
const APPS = fileURLToPath(new URL('../../apps/', import.meta.url));

async function netnsAvailable(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root to create network namespaces';
  try {
    await run('ip', ['netns', 'list']);
    return undefined;
  } catch {
    return 'iproute2 (`ip netns`) is not available';
  }
}

/**
 * A cluster of separate network hosts: JobTracker and three workers each in a network namespace of
 * its own, talking over a bridge, driven by cluster/netns-cluster.sh exactly as a user would.
 */
describe('a cluster of several hosts (network namespaces)', () => {
  it(
    'refuses a client on another host without the secret or with a ' +
      'wrong one, and runs WordCount across hosts with the same result ' +
      'as a plain count',
    async (t) => {
      const why = await netnsAvailable();
      if (why) {
        t.skip(why);
        return;
      }
      const prefix = `mrt${process.pid % 10000}`;
      const env = { ...process.env, MINIMR_NETNS_PREFIX: prefix, MINIMR_LOG_LEVEL: 'warn' };
      const dir = await mkdtemp(join(tmpdir(), 'minimr-netns-'));
      const text = makeText(900_000, 21);
      await writeFile(join(dir, 'in.txt'), text);
      try {
        await run('bash', [SCRIPT, 'up', '3'], { env });
        const { stdout: info } = await run('bash', [SCRIPT, 'info'], { env });
        assert.deepEqual(
          info
            .trim()
            .split('\n')
            .map((l) => l.split(' ')[2])
            .sort(),
          ['10.77.0.11', '10.77.0.12', '10.77.0.13'],
        );
        // Another host without the secret (its own home: no pointer to this machine's secret file),
        // then with a wrong one: refused, and the cluster serves the WordCount below all the same.
        const home = join(dir, 'stranger');
        const wrongSecret = join(dir, 'wrong-secret');
        await writeFile(wrongSecret, 'f'.repeat(64), { mode: 0o600 });
        const stranger = async (extra: string[]) => {
          const strangerEnv: NodeJS.ProcessEnv = { ...env, HOME: home };
          delete strangerEnv.MINIMR_SECRET_FILE;
          const argv = [
            'netns',
            'exec',
            `${prefix}-w1`,
            process.execPath,
            BIN,
            'job',
            'list',
            '--jobtracker',
            'ws://10.77.0.1:7700',
            ...extra,
          ];
          const r = await run('ip', argv, { env: strangerEnv }).then(
            () => ({ code: 0, stderr: '' }),
            (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
          );
          assert.equal(
            r.code,
            1,
            `a client on another host with ${extra.length ? 'a wrong secret' : 'no secret'} must be refused`,
          );
          assert.match(r.stderr, /EAUTH/);
        };
        await stranger([]);
        await stranger(['--secret-file', wrongSecret]);
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
            '2',
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
      } finally {
        await run('bash', [SCRIPT, 'down'], { env }).catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});

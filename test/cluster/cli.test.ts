import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { cliEnv, MINIMR_BIN as BIN, runMinimr, type CliResult } from '../helpers/cli.js';
import { makeText, parseCounts, referenceWordCount } from '../helpers/cluster.js';

const SAMPLE = fileURLToPath(new URL('../../../apps/data/sample.txt', import.meta.url));
const WORDCOUNT = fileURLToPath(new URL('../../apps/wordcount.js', import.meta.url));

function minimr(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runMinimr(args, { env: cliEnv(env) });
}

describe('the minimr command', () => {
  it('quick start: `minimr local --example wordcount` prints the most frequent words of the sample', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'minimr-cli-'));
    try {
      const r = await minimr(['local', '--workers', '3', '--dir', dir, '--example', 'wordcount', '--top', '5']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /map +100% reduce +100%/);
      const want = [...referenceWordCount(await readFile(SAMPLE, 'utf8'))]
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, 5);
      const got = r.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.trim().split(/\s+/));
      assert.deepEqual(
        got.map(([n, w]) => [w, Number(n)]),
        want,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe('against a running `minimr local`', () => {
    let dir: string;
    let cluster: ChildProcess;
    let env: Record<string, string>;

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'minimr-cli-'));
      cluster = spawn(
        process.execPath,
        [BIN, 'local', '--workers', '3', '--port', '0', '--dir', join(dir, 'cluster'), '--block-size', '64k'],
        {
          env: { ...process.env, MINIMR_LOG_LEVEL: 'error' },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let err = '';
      const url = await new Promise<string>((resolve, reject) => {
        cluster.stderr!.on('data', (d: Buffer) => {
          err += d.toString();
          const m = /JobTracker (ws:\/\/\S+?),/.exec(err);
          if (m) resolve(m[1]!);
        });
        cluster.once('exit', () => reject(new Error(`minimr local exited: ${err}`)));
      });
      env = { MINIMR_JOBTRACKER: url };
    });

    after(async () => {
      const exited = once(cluster, 'exit');
      cluster.kill('SIGINT');
      await exited;
      await rm(dir, { recursive: true, force: true });
    });

    it('fs put / ls / stat / cat / get / mkdir / rm', async () => {
      const local = join(dir, 'in.txt');
      const text = makeText(200_000, 3);
      await writeFile(local, text);
      assert.equal((await minimr(['fs', 'put', local, '/data/in.txt'], env)).code, 0);
      const again = await minimr(['fs', 'put', local, '/data/in.txt'], env);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /EEXIST/);
      assert.match((await minimr(['fs', 'ls', '/data'], env)).stdout, /\/data\/in\.txt/);
      const stat = await minimr(['fs', 'stat', '/data/in.txt'], env);
      assert.match(stat.stdout, /"length":\d+/);
      assert.ok((stat.stdout.match(/blk_/g) ?? []).length >= 3, 'several 64k blocks');
      assert.equal((await minimr(['fs', 'cat', '/data/in.txt'], env)).stdout, text);
      await minimr(['fs', 'get', '/data/in.txt', join(dir, 'back.txt')], env);
      assert.equal(await readFile(join(dir, 'back.txt'), 'utf8'), text);
      assert.equal((await minimr(['fs', 'mkdir', '-p', '/a/b/c'], env)).code, 0);
      const rmDir = await minimr(['fs', 'rm', '/a'], env);
      assert.equal(rmDir.code, 1, 'a non-empty directory needs -r');
      assert.equal((await minimr(['fs', 'rm', '-r', '/a'], env)).code, 0);
      const missing = await minimr(['fs', 'cat', '/nope'], env);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /ENOENT/);
    });

    it('fs ls / cat take file:// URIs, and fs cp copies trees between stores', async () => {
      const tree = join(dir, 'tree');
      await mkdir(join(tree, 'sub'), { recursive: true });
      const texts = { 'a.txt': makeText(150_000, 5), 'sub/b.txt': makeText(90_000, 6) };
      for (const [name, text] of Object.entries(texts)) await writeFile(join(tree, name), text);
      const ls = await minimr(['fs', 'ls', `file://${tree}`], env);
      assert.equal(ls.code, 0, ls.stderr);
      assert.match(ls.stdout, /^Found 2 items$/m);
      const aBytes = Buffer.byteLength(texts['a.txt']);
      assert.match(ls.stdout, new RegExp(`^- +${aBytes} .* file://${tree}/a\\.txt$`, 'm'));
      assert.match(ls.stdout, new RegExp(`^d .* file://${tree}/sub$`, 'm'));
      assert.equal((await minimr(['fs', 'cat', `file://${tree}/a.txt`], env)).stdout, texts['a.txt']);
      // file:// -> block store -> file://, the block store's copy checked by its own cat.
      const up = await minimr(['fs', 'cp', `file://${tree}`, '/copied'], env);
      assert.equal(up.code, 0, up.stderr);
      const bytes = Object.values(texts).reduce((n, t) => n + Buffer.byteLength(t), 0);
      assert.match(up.stderr, new RegExp(`copied 2 file\\(s\\), ${bytes} bytes`));
      assert.equal((await minimr(['fs', 'cat', '/copied/sub/b.txt'], env)).stdout, texts['sub/b.txt']);
      assert.equal((await minimr(['fs', 'cat', 'minimr:///copied/sub/b.txt'], env)).stdout, texts['sub/b.txt']);
      const back = join(dir, 'back-tree');
      assert.equal((await minimr(['fs', 'cp', '/copied', `file://${back}`], env)).code, 0);
      for (const [name, text] of Object.entries(texts)) assert.equal(await readFile(join(back, name), 'utf8'), text);
      const again = await minimr(['fs', 'cp', `file://${tree}/a.txt`, `file://${back}/a.txt`], env);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /EEXIST/);
      const bad = await minimr(['fs', 'ls', 'ftp://x/y'], env);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /EBADPATH.*unknown scheme ftp/);
    });

    it('submit shows progress and counters; job list and status show the job; output is right', async () => {
      const text = makeText(300_000, 4);
      await writeFile(join(dir, 'wc.txt'), text);
      await minimr(['fs', 'put', join(dir, 'wc.txt'), '/wc/in.txt'], env);
      const r = await minimr(
        ['submit', WORDCOUNT, '--input', '/wc/in.txt', '--output', '/wc/out', '--reducers', '2'],
        env,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /map +\d+% reduce +\d+%/);
      assert.match(r.stderr, /MAP_INPUT_RECORDS/);
      const jobId = /(job_\d+_\d+)/.exec(r.stdout)![1]!;
      assert.match((await minimr(['job', 'list'], env)).stdout, new RegExp(`${jobId}.*succeeded`));
      assert.match((await minimr(['job', 'status', jobId], env)).stdout, /maps \d+\/\d+/);
      const out = parseCounts((await minimr(['fs', 'cat', '/wc/out'], env)).stdout);
      assert.deepEqual(out, referenceWordCount(text));
    });

    it('bad input: clear error, exit status 1', async () => {
      const noInput = await minimr(['submit', WORDCOUNT, '--input', '/missing', '--output', '/x'], env);
      assert.equal(noInput.code, 1);
      assert.match(noInput.stderr, /minimr: ENOINPUT: input path \/missing does not exist/);
      const noJob = await minimr(['job', 'status', 'job_0_0001'], env);
      assert.match(noJob.stderr, /ENOJOB/);
      const badModule = await minimr(['submit', join(dir, 'nope.js'), '--input', '/wc/in.txt', '--output', '/x'], env);
      assert.match(badModule.stderr, /EJOBMODULE: cannot read job module/);
      const noCluster = await minimr(['job', 'list'], { MINIMR_JOBTRACKER: 'ws://127.0.0.1:9' });
      assert.equal(noCluster.code, 1);
      assert.match(noCluster.stderr, /ECONNECT: cannot reach the JobTracker/);
    });
  });
});

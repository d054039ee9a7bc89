/**
 * The `minimr` command behaves like a Unix tool (issue 35, item 5): every command, given bad input,
 * a missing cluster or a closed pipe, prints at most one `minimr: CODE: message` line and never a
 * Node stack; a closed pipe ends it quietly with status 0; usage errors say "did you mean"; `--json`
 * prints what scripts parse; the `fs` verbs of `hdfs dfs` (get of a tree, getmerge, mv, du, tail,
 * put from stdin) give what was put in. The commands are read from `minimr --help`, so a command
 * added later without a bad-input case here fails the coverage test.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  cliEnv,
  MINIMR_BIN as BIN,
  runMinimr as runMinimrUntimed,
  type CliOptions,
  type CliResult,
} from '../helpers/cli.js';
import { makeText, referenceWordCount } from '../helpers/cluster.js';

/** Every command here should answer within seconds: one that waits instead fails its case, not the suite. */
function runMinimr(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return runMinimrUntimed(args, { timeoutMs: 60_000, ...options });
}

/** `fn` over `items`, `width` at a time (each a process start: the cores, not the waiting, bound them). */
async function eachConcurrently<T>(items: readonly T[], fn: (item: T) => Promise<void>, width = 3): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** A line of a Node stack trace. */
const STACK_LINE = /^\s+at /m;
/** Where no JobTracker listens (the discard port). */
const NO_CLUSTER = 'ws://127.0.0.1:9';

function assertOneLineFailure(r: CliResult, what: string): void {
  assert.notEqual(r.code, 0, `${what}: exit status\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, STACK_LINE, `${what}: a stack in stderr\n${r.stderr}`);
  assert.match(r.stderr, /^minimr: E[A-Z]+: \S/m, `${what}: no 'minimr: CODE: message' line\n${r.stderr}`);
}

/** Runs `minimr ARGS` with its stdout's reader gone before it writes: a closed pipe. */
async function withClosedStdout(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code: code ?? -1, stdout: '', stderr };
}

/** The leaf commands `minimr --help` lists, as word lists (`['fs', 'ls']`), read from the help texts. */
async function leafCommands(): Promise<string[][]> {
  const commandsOf = async (prefix: string[]): Promise<string[]> => {
    const help = (await runMinimr([...prefix, '--help'])).stdout;
    const section = help.split(/\n(?=\S)/).find((s) => s.startsWith('Commands:')) ?? '';
    const names: string[] = [];
    for (const line of section.split('\n').slice(1)) {
      const words = line.trim().split(/\s+/);
      if (words[0] === 'minimr' && words.slice(1, prefix.length + 1).join(' ') === prefix.join(' ')) {
        const name = words[prefix.length + 1];
        if (name && /^[a-z][\w-]*$/.test(name)) names.push(name);
      }
    }
    return names;
  };
  const tops = await commandsOf([]);
  const subsOf = new Map<string, string[]>();
  await eachConcurrently(tops, async (top) => {
    subsOf.set(top, await commandsOf([top]));
  });
  return tops.flatMap((top) => {
    const subs = subsOf.get(top)!;
    return subs.length === 0 ? [[top]] : subs.map((sub) => [top, sub]);
  });
}

/**
 * Each command with input that is wrong for it. `cluster` marks commands that talk to a JobTracker
 * (also tried against none).
 */
const BAD_INPUT: Record<string, { args: string[]; cluster?: boolean }> = {
  local: { args: ['local', '--workers', 'many'] },
  sim: { args: ['sim', '--workload', '/no/such/workload.json'] },
  sweep: {
    args: ['sweep', '--workload', 'improved-fair', '--policy', 'fiar', '--out', '/tmp/minimr-cli-unix-sweep.jsonl'],
  },
  jobtracker: { args: ['jobtracker', '--dir', '/etc/passwd/jt', '--port', '99999'] },
  worker: { args: ['worker', '--join-token', 'garbage'] },
  submit: { args: ['submit', '/no/such/job.js', '--output', '/out/x'], cluster: true },
  streaming: {
    args: ['streaming', '--input', '/no/such/input', '--output', '/out/s', '--mapper', 'cat'],
    cluster: true,
  },
  profile: { args: ['profile', '/no/such/job.js', '--input', '/in'], cluster: true },
  'profiles list': { args: ['profiles', 'list', '--bogus'], cluster: true },
  'profiles show': { args: ['profiles', 'show', 'no-such-job'], cluster: true },
  'profiles import': { args: ['profiles', 'import', '/no/such/profile.json'], cluster: true },
  'profiles rm': { args: ['profiles', 'rm', 'no-such-job'], cluster: true },
  'job status': { args: ['job', 'status', 'job_0_0001'], cluster: true },
  'job attempts': { args: ['job', 'attempts', 'job_0_0001'], cluster: true },
  'job logs': { args: ['job', 'logs', 'attempt_0_0001_m_000000_0'], cluster: true },
  'job list': { args: ['job', 'list', '--all=maybe', '--bogus'], cluster: true },
  'job kill': { args: ['job', 'kill', 'job_0_0001'], cluster: true },
  'mrc activate': { args: ['mrc', 'activate', 'x', '--nodes', 'none'], cluster: true },
  'mrc list': { args: ['mrc', 'list', '--bogus'], cluster: true },
  'mrc deactivate': { args: ['mrc', 'deactivate', 'no-such-mrc'], cluster: true },
  'user add': { args: ['user', 'add', 'Not A Name!'], cluster: true },
  'user list': { args: ['user', 'list', '--bogus'], cluster: true },
  'user revoke': { args: ['user', 'revoke', 'nosuchuser'], cluster: true },
  'web-password': { args: ['web-password', '--secret-file', '/no/such/secret'] },
  run: { args: ['run', '/no/such/job.js', '--input', '/no/such/input', '--output', '/tmp/minimr-cli-unix-nowhere'] },
  'join-token': { args: ['join-token', '--dir', '/no/such/jobtracker'] },
  policies: { args: ['policies', 'no-such-policy'] },
  'policy check': { args: ['policy', 'check', '/no/such/policy.ts'] },
  'fs fsck': { args: ['fs', 'fsck', '/no/such/path'], cluster: true },
  'fs put': { args: ['fs', 'put', '/no/such/local/file', '/x'], cluster: true },
  'fs get': { args: ['fs', 'get', '/no/such/path', '/tmp/minimr-cli-unix-nowhere'], cluster: true },
  'fs getmerge': { args: ['fs', 'getmerge', '/no/such/dir', '/tmp/minimr-cli-unix-nowhere'], cluster: true },
  'fs cat': { args: ['fs', 'cat', '/no/such/path'], cluster: true },
  'fs tail': { args: ['fs', 'tail', '/no/such/path'], cluster: true },
  'fs mv': { args: ['fs', 'mv', '/no/such/path', '/elsewhere'], cluster: true },
  'fs cp': { args: ['fs', 'cp', '/no/such/path', 'file:///tmp/minimr-cli-unix-nowhere'], cluster: true },
  'fs du': { args: ['fs', 'du', '/no/such/path'], cluster: true },
  'fs ls': { args: ['fs', 'ls', '/no/such/path'], cluster: true },
  'fs chmod': { args: ['fs', 'chmod', 'rwx', '/'], cluster: true },
  'fs chown': { args: ['fs', 'chown', 'nobody', '/no/such/path'], cluster: true },
  'fs rm': { args: ['fs', 'rm', '/no/such/path'], cluster: true },
  'fs stat': { args: ['fs', 'stat', '/no/such/path'], cluster: true },
  'fs mkdir': { args: ['fs', 'mkdir', '/no/such/parent/dir'], cluster: true },
  'bench policies': { args: ['bench', 'policies', '--policies', 'no-such-policy'] },
};

describe('the minimr command as a Unix tool', () => {
  let dir: string;
  let cluster: ChildProcess;
  let url: string;
  let env: NodeJS.ProcessEnv;
  let jobId: string;
  let text: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-cli-unix-'));
    cluster = spawn(
      process.execPath,
      [BIN, 'local', '--workers', '2', '--port', '0', '--dir', join(dir, 'cluster'), '--block-size', '64k'],
      { env: cliEnv(), stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let err = '';
    url = await new Promise<string>((resolve, reject) => {
      cluster.stderr!.on('data', (d: Buffer) => {
        err += d.toString();
        const m = /JobTracker (ws:\/\/\S+?),/.exec(err);
        if (m) resolve(m[1]!);
      });
      cluster.once('exit', () => reject(new Error(`minimr local exited: ${err}`)));
    });
    env = cliEnv({ MINIMR_JOBTRACKER: url });
    text = makeText(300_000, 7);
    await writeFile(join(dir, 'in.txt'), text);
    const put = await runMinimr(['fs', 'put', join(dir, 'in.txt'), '/in/a.txt'], { env });
    assert.equal(put.code, 0, put.stderr);
    const wordcount = new URL('../../apps/wordcount.js', import.meta.url).pathname;
    const submit = await runMinimr(
      ['submit', wordcount, '--input', '/in', '--output', '/out/wc', '--reducers', '3', '--no-wait'],
      { env },
    );
    assert.equal(submit.code, 0, submit.stderr);
    jobId = submit.stdout.trim();
    for (let i = 0; i < 600; i++) {
      const s = JSON.parse((await runMinimr(['job', 'status', jobId, '--json'], { env })).stdout) as { state: string };
      if (s.state === 'succeeded') break;
      assert.ok(s.state === 'running' || s.state === 'pending', `job ${s.state}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  });

  after(async () => {
    const exited = once(cluster, 'exit');
    cluster.kill('SIGINT');
    await exited;
    await rm(dir, { recursive: true, force: true });
  });

  it('every command has a bad-input case here (read from the help, so new commands are covered)', async () => {
    const leaves = (await leafCommands()).map((words) => words.join(' '));
    assert.ok(leaves.length >= 30, leaves.join(', '));
    assert.deepEqual(
      leaves.filter((c) => !(c in BAD_INPUT)),
      [],
      'commands without a bad-input case in BAD_INPUT',
    );
  });

  it('every command given bad input prints one line with a code, exits non-zero, and shows no stack', async () => {
    await eachConcurrently(Object.entries(BAD_INPUT), async ([name, c]) =>
      assertOneLineFailure(await runMinimr(c.args, { env }), name),
    );
  });

  it('every command that needs a cluster, with none there, says so in one line', async () => {
    const none = cliEnv({ MINIMR_JOBTRACKER: NO_CLUSTER });
    const needing = Object.entries(BAD_INPUT).filter(([, c]) => c.cluster);
    await eachConcurrently(needing, async ([name, c]) =>
      assertOneLineFailure(await runMinimr(c.args.slice(0, 3), { env: none }), `${name} without a cluster`),
    );
  });

  it('a closed pipe ends every command that prints quietly, with status 0', async () => {
    const printing: string[][] = [
      ['--help'],
      ['fs', '--help'],
      ['fs', 'cat', '/in/a.txt'],
      ['fs', 'cat', '/out/wc'],
      ['fs', 'tail', '/in/a.txt'],
      ['fs', 'ls', '/out/wc'],
      ['fs', 'ls', '/out/wc', '--json'],
      ['fs', 'du', '/'],
      ['fs', 'stat', '/in/a.txt'],
      ['fs', 'fsck', '/'],
      ['job', 'list'],
      ['job', 'status', jobId],
      ['job', 'attempts', jobId],
      ['policies'],
      ['user', 'list'],
      ['mrc', 'list'],
      ['profiles', 'list'],
    ];
    await eachConcurrently(printing, async (args) => {
      const r = await withClosedStdout(args, env);
      assert.equal(r.code, 0, `${args.join(' ')}: exit status\n${r.stderr}`);
      assert.doesNotMatch(r.stderr, STACK_LINE, `${args.join(' ')}\n${r.stderr}`);
      assert.doesNotMatch(r.stderr, /minimr: E|Warning/, `${args.join(' ')}\n${r.stderr}`);
    });
  });

  it('`fs cat` of a directory of part files adds no listener per file (no MaxListenersExceededWarning)', async () => {
    const many = join(dir, 'many');
    await mkdir(many);
    for (let i = 0; i < 14; i++) await writeFile(join(many, `part-${String(i).padStart(5, '0')}`), `line ${i}\n`);
    await eachConcurrently(
      Array.from({ length: 14 }, (_, i) => `part-${String(i).padStart(5, '0')}`),
      async (name) =>
        assert.equal((await runMinimr(['fs', 'put', join(many, name), `/many/${name}`], { env })).code, 0),
    );
    const r = await runMinimr(['fs', 'cat', '/many'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, Array.from({ length: 14 }, (_, i) => `line ${i}\n`).join(''));
  });

  it('usage errors: one line, "did you mean" for commands, subcommands and flags, exit status 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['subbmit'], /^minimr: EUSAGE: unknown command 'subbmit' \(did you mean 'submit'\?\)$/m],
      [['fs', 'lss', '/'], /^minimr: EUSAGE: unknown command 'lss' \(did you mean 'ls'\?\)$/m],
      [['fs', 'ls', '/', '--jsn'], /^minimr: EUSAGE: unknown option --jsn \(did you mean --json\?\)$/m],
      [['submit', 'x.js', '--outptu', '/o'], /unknown option --outptu \(did you mean --output\?\)/],
    ];
    for (const [args, want] of cases) {
      const r = await runMinimr(args, { env });
      assert.equal(r.code, 2, `${args.join(' ')}\n${r.stderr}`);
      assert.match(r.stderr, want);
      assert.ok(r.stderr.trim().split('\n').length <= 2, `at most two lines, not the whole help:\n${r.stderr}`);
      assert.match(r.stderr, /^run 'minimr [a-z ]*--help'/m);
    }
  });

  it('--json on job status, list and attempts and on fs ls and stat', async () => {
    const status = JSON.parse((await runMinimr(['job', 'status', jobId, '--json'], { env })).stdout);
    assert.equal(status.jobId, jobId);
    assert.equal(status.state, 'succeeded');
    const list = JSON.parse((await runMinimr(['job', 'list', '--json'], { env })).stdout) as Array<{ jobId: string }>;
    assert.ok(list.some((j) => j.jobId === jobId));
    const attempts = JSON.parse((await runMinimr(['job', 'attempts', jobId, '--json'], { env })).stdout) as Array<{
      state: string;
    }>;
    assert.equal(attempts.filter((a) => a.state === 'succeeded').length, status.mapsTotal + 3);
    const ls = JSON.parse((await runMinimr(['fs', 'ls', '/out/wc', '--json'], { env })).stdout) as Array<{
      path: string;
    }>;
    assert.deepEqual(ls.map((f) => f.path).sort(), [
      '/out/wc/_SUCCESS',
      '/out/wc/part-r-00000',
      '/out/wc/part-r-00001',
      '/out/wc/part-r-00002',
    ]);
    const stat = JSON.parse((await runMinimr(['fs', 'stat', '/in/a.txt', '--json'], { env })).stdout);
    assert.equal(stat.length, Buffer.byteLength(text));
    assert.equal(
      (stat.blocks as Array<{ length: number }>).reduce((n, b) => n + b.length, 0),
      Buffer.byteLength(text),
    );
    assert.ok(
      (stat.blocks as object[]).every((b) => !('token' in b)),
      'no block access token (a credential) in the output',
    );
  });

  it('tables have headers: job list, job attempts, fs ls, fs du', async () => {
    assert.match((await runMinimr(['job', 'list'], { env })).stdout, /^JOB +NAME +USER +STATE +MAPS +REDUCES +TIME/);
    assert.match((await runMinimr(['job', 'attempts', jobId], { env })).stdout, /^ATTEMPT +STATE +WORKER +TIME/);
    assert.match((await runMinimr(['fs', 'ls', '/out/wc'], { env })).stdout, /^Found 4 items\n/);
    assert.match((await runMinimr(['fs', 'du', '/'], { env })).stdout, /^ *SIZE {2}PATH\n/);
  });

  it('fs get of a tree, getmerge, mv, du, tail and put - give back what was put in', async () => {
    // put - : from stdin.
    const child = spawn(process.execPath, [BIN, 'fs', 'put', '-', '/stdin.txt'], { env });
    child.stdin.end(text);
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0);
    assert.equal((await runMinimr(['fs', 'cat', '/stdin.txt'], { env })).stdout, text);
    // tail: the last kilobyte, or -c bytes.
    assert.equal((await runMinimr(['fs', 'tail', '/stdin.txt'], { env })).stdout, text.slice(-1024));
    assert.equal((await runMinimr(['fs', 'tail', '-c', '10', '/stdin.txt'], { env })).stdout, text.slice(-10));
    // mv: a rename, and into a directory keeping the name.
    assert.equal((await runMinimr(['fs', 'mv', '/stdin.txt', '/moved.txt'], { env })).code, 0);
    assert.equal((await runMinimr(['fs', 'mkdir', '/into'], { env })).code, 0);
    assert.equal((await runMinimr(['fs', 'mv', '/moved.txt', '/into'], { env })).code, 0);
    assert.equal((await runMinimr(['fs', 'cat', '/into/moved.txt'], { env })).stdout, text);
    assertOneLineFailure(await runMinimr(['fs', 'cat', '/moved.txt'], { env }), 'the old name is gone');
    // du: bytes per entry and summed (-s), against the lengths put in.
    const du = JSON.parse((await runMinimr(['fs', 'du', '/', '--json'], { env })).stdout) as Array<{
      path: string;
      bytes: number;
    }>;
    const byPath = new Map(du.map((r) => [r.path, r.bytes]));
    assert.equal(byPath.get('/in'), Buffer.byteLength(text));
    assert.equal(byPath.get('/into'), Buffer.byteLength(text));
    const wcBytes = JSON.parse((await runMinimr(['fs', 'ls', '/out/wc', '--json'], { env })).stdout).reduce(
      (n: number, f: { length: number }) => n + f.length,
      0,
    );
    assert.equal(byPath.get('/out'), wcBytes);
    assert.match(
      (await runMinimr(['fs', 'du', '-s', '/out'], { env })).stdout,
      new RegExp(`^ *${wcBytes} {2}/out$`, 'm'),
    );
    // get of a directory: the tree, under LOCAL/NAME when LOCAL exists.
    const got = join(dir, 'got');
    await mkdir(got);
    assert.equal((await runMinimr(['fs', 'get', '/out', got], { env })).code, 0);
    assert.deepEqual((await readdir(join(got, 'out', 'wc'))).sort(), [
      '_SUCCESS',
      'part-r-00000',
      'part-r-00001',
      'part-r-00002',
    ]);
    assertOneLineFailure(
      await runMinimr(['fs', 'get', '/into/moved.txt', join(dir, 'in.txt')], { env }),
      'get onto a file',
    );
    // getmerge: the part files in name order, the word count of what was put in.
    const merged = join(dir, 'merged.txt');
    assert.equal((await runMinimr(['fs', 'getmerge', '/out/wc', merged], { env })).code, 0);
    const parts = await Promise.all(
      ['part-r-00000', 'part-r-00001', 'part-r-00002'].map((p) => readFile(join(got, 'out', 'wc', p), 'utf8')),
    );
    const mergedText = await readFile(merged, 'utf8');
    assert.equal(mergedText, parts.join(''));
    const counts = new Map(
      mergedText
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => {
          const tab = l.lastIndexOf('\t');
          return [l.slice(0, tab), Number(l.slice(tab + 1))] as const;
        }),
    );
    assert.deepEqual(counts, referenceWordCount(text));
  });

  it('`minimr local`: a second cluster in the same folder and a busy --port are refused in one line', async () => {
    const second = await runMinimr(['local', '--workers', '1', '--port', '0', '--dir', join(dir, 'cluster')]);
    assertOneLineFailure(second, 'second local');
    assert.match(second.stderr, /^minimr: EBUSY: another minimr process is using /m);
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    try {
      const port = (busy.address() as { port: number }).port;
      const r = await runMinimr(['local', '--workers', '1', '--port', String(port), '--dir', join(dir, 'busy')]);
      assertOneLineFailure(r, 'busy port');
      assert.match(r.stderr, new RegExp(`^minimr: EBUSY: port ${port} is in use`, 'm'));
    } finally {
      busy.close();
    }
  });
});

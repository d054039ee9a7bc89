/**
 * `minimr run JOB --input LOCAL --output LOCAL` (issue 35, item 4): a job on local files on a
 * throwaway cluster, checked as a user runs it: `node bin/minimr.js run ...`, its output against a
 * word count computed here, and, after it exits, no process of its tree alive and no temporary
 * directory left (on success, failure and SIGTERM alike).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { appModule, fixtureModule, makeText, parseCounts, referenceWordCount } from '../helpers/cluster.js';
import { MINIMR_BIN } from '../helpers/cli.js';

/** Parent pid of every process, from /proc (Linux). */
async function parents(): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[1]) out.set(Number(name), Number(fields[1]));
  }
  return out;
}

async function descendantsOf(pid: number): Promise<number[]> {
  const ppid = await parents();
  const found: number[] = [];
  let frontier = [pid];
  while (frontier.length > 0) {
    const next: number[] = [];
    for (const [child, parent] of ppid) if (frontier.includes(parent)) next.push(child);
    found.push(...next);
    frontier = next;
  }
  return found;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  stdout: string;
  /** Every process seen below the command while it ran. */
  tree: number[];
}

/**
 * Runs `minimr run ARGS` with TMPDIR=`temp`, watching its process tree; `whenRunning` is called
 * once stderr shows the job running (with the child, to signal it).
 */
async function minimrRun(
  args: readonly string[],
  temp: string,
  whenRunning?: (child: ReturnType<typeof spawn>) => void,
): Promise<RunResult> {
  const child = spawn(process.execPath, [MINIMR_BIN, 'run', ...args], {
    env: { ...process.env, MINIMR_LOG_LEVEL: 'error', TMPDIR: temp },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  let signalled = false;
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (whenRunning && !signalled && /running\s+map/.test(stderr)) {
      signalled = true;
      whenRunning(child);
    }
  });
  const tree = new Set<number>();
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let done = false;
  void exited.then(() => (done = true));
  while (!done) {
    for (const pid of await descendantsOf(child.pid!)) tree.add(pid);
    await new Promise((r) => setTimeout(r, 50));
  }
  const [code, signal] = await exited;
  return { code, signal, stderr, stdout, tree: [...tree] };
}

/** The command left nothing behind: no process of its tree alive, its temporary directory removed. */
async function assertNothingLeft(r: RunResult, temp: string): Promise<void> {
  // A process that was ending as the command exited gets a moment to be reaped.
  const deadline = Date.now() + 5000;
  while (r.tree.some(isAlive) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
  assert.deepEqual(r.tree.filter(isAlive), [], 'no process of the command is left running');
  assert.deepEqual(await readdir(temp), [], 'the temporary directory is removed');
}

/** All part files of a local output directory, as word counts. */
async function localCounts(dir: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const name of (await readdir(dir)).filter((n) => n.startsWith('part-')).sort()) {
    for (const [w, n] of parseCounts(await readFile(join(dir, name), 'utf8'))) counts.set(w, n);
  }
  return counts;
}

/** The command printed exactly one line to stderr, `minimr: CODE: ...`, and no stack. */
function assertOneErrorLine(r: RunResult, code: string): void {
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, new RegExp(`^minimr: ${code}: `));
  assert.doesNotMatch(r.stderr, /^\s+at /m);
}

describe('minimr run on local files', () => {
  let dir: string;
  let temp: string;
  let input: string;
  const texts = [makeText(120_000, 21), makeText(90_000, 22), makeText(30_000, 23)];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-run-test-'));
    temp = join(dir, 'tmp');
    await mkdir(temp);
    input = join(dir, 'input');
    await mkdir(join(input, 'more', 'deeper'), { recursive: true });
    await writeFile(join(input, 'a.txt'), texts[0]!);
    await writeFile(join(input, 'more', 'b.txt'), texts[1]!);
    await writeFile(join(input, 'more', 'deeper', 'c.txt'), texts[2]!);
    // Hidden files are not input (as Hadoop's FileInputFormat skips _ and . names).
    await writeFile(join(input, '.hidden.txt'), 'hidden words never counted\n');
    await writeFile(join(input, 'more', '_SUCCESS'), 'marker words never counted\n');
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs WordCount on a local directory tree and writes the part files locally', async () => {
    const out = join(dir, 'out');
    const r = await minimrRun([appModule('wordcount'), '--input', input, '--output', out, '--reducers', '2'], temp);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /map 100% reduce 100%/, 'progress on stderr');
    assert.deepEqual((await readdir(out)).sort(), ['_SUCCESS', 'part-r-00000', 'part-r-00001']);
    assert.deepEqual(await localCounts(out), referenceWordCount(texts.join('')));
    assert.ok(r.tree.length >= 2, `the command ran a cluster of processes (${r.tree.length} seen)`);
    await assertNothingLeft(r, temp);
  });

  it('runs a streaming job (--mapper, --reducer, --file) on local files: the same counts as WordCount', async () => {
    const out = join(dir, 'out-streaming');
    // The mapper and reducer as shell commands (tr, sort, uniq, awk): Python is streaming.test's.
    const mapper = join(dir, 'words.sh');
    await writeFile(mapper, "tr ' \\t\\r\\f' '\\n\\n\\n\\n' | grep -v '^$' | sed 's/$/\\t1/'\n");
    const r = await minimrRun(
      [
        '--mapper',
        'sh words.sh',
        '--reducer',
        "awk -F '\\t' '{ n[$1] += $2 } END { for (w in n) print w \"\\t\" n[w] }'",
        '--file',
        mapper,
        '--input',
        input,
        '--output',
        out,
        '--reducers',
        '2',
      ],
      temp,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await localCounts(out), referenceWordCount(texts.join('')));
    await assertNothingLeft(r, temp);
  });

  it('takes a job module or --mapper, not both and not neither (EUSAGE)', async () => {
    const neither = await minimrRun(['--input', input, '--output', join(dir, 'never')], temp);
    assert.equal(neither.code, 2, neither.stderr);
    assert.match(neither.stderr, /^minimr: EUSAGE: minimr run takes a job module or --mapper/m);
    const both = await minimrRun(
      [appModule('wordcount'), '--mapper', 'cat', '--input', input, '--output', join(dir, 'never')],
      temp,
    );
    assert.equal(both.code, 2, both.stderr);
  });

  it('refuses an existing output, and replaces it with --overwrite', async () => {
    const out = join(dir, 'out');
    const refused = await minimrRun([appModule('wordcount'), '--input', input, '--output', out], temp);
    assertOneErrorLine(refused, 'EOUTPUTEXISTS');
    assert.deepEqual((await readdir(out)).sort(), ['_SUCCESS', 'part-r-00000', 'part-r-00001']);
    await assertNothingLeft(refused, temp);

    const one = join(input, 'more', 'b.txt');
    const r = await minimrRun([appModule('wordcount'), '-i', one, '-o', out, '--overwrite'], temp);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((await readdir(out)).sort(), ['_SUCCESS', 'part-r-00000'], 'no file of the old output left');
    assert.deepEqual(await localCounts(out), referenceWordCount(texts[1]!));
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.startsWith('.')),
      [],
      'no staging directory beside it',
    );
    await assertNothingLeft(r, temp);
  });

  it('keeps the old output when an --overwrite job fails, and says why in one line', async () => {
    const out = join(dir, 'out');
    const before = await readFile(join(out, 'part-r-00000'));
    const r = await minimrRun([fixtureModule('failing-map'), '--input', input, '--output', out, '--overwrite'], temp);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^minimr: EJOBFAILED: .*boom in map on purpose/m);
    assert.doesNotMatch(r.stderr, /^\s+at /m);
    assert.ok((await readFile(join(out, 'part-r-00000'))).equals(before), 'the old output is untouched');
    await assertNothingLeft(r, temp);
  });

  it('a missing input is one line with a code, and nothing is started', async () => {
    const r = await minimrRun(
      [appModule('wordcount'), '--input', join(dir, 'no-such-input'), '--output', join(dir, 'out-missing')],
      temp,
    );
    assertOneErrorLine(r, 'ENOINPUT');
    assert.match(r.stderr, /no-such-input/);
    await assertNothingLeft(r, temp);
    await assert.rejects(readdir(join(dir, 'out-missing')), /ENOENT/);
  });

  it('SIGTERM while the job runs stops everything, removes the temporary directory and writes no output', async () => {
    const out = join(dir, 'out-interrupted');
    const r = await minimrRun(
      [
        fixtureModule('slow-wordcount'),
        '--input',
        input,
        '--output',
        out,
        '--param',
        'mapDelayMs=200',
        '--param',
        'reduceDelayMs=200',
      ],
      temp,
      (child) => child.kill('SIGTERM'),
    );
    assert.notEqual(r.code, 0, r.stderr);
    assert.match(r.stderr, /minimr: EJOBKILLED: interrupted/);
    await assertNothingLeft(r, temp);
    await assert.rejects(readdir(out), /ENOENT/);
  });
});

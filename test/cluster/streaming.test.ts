import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { streamingJob, type StreamingOptions } from '../../src/cli/commands/index.js';
import type { JobStatus, SubmitOptions } from '../../src/runtime/index.js';
import { runMinimr } from '../helpers/cli.js';
import {
  appModule,
  fixtureModule,
  isCode,
  makeText,
  parseCounts,
  readOutput,
  referenceWordCount,
  startTestCluster,
  type TestCluster,
  waitFor,
} from '../helpers/cluster.js';

/** Processes running `sleep SECONDS` on this machine (the workers are local). */
function sleepers(seconds: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `sleep\0${seconds}\0`) found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}

/** The Python WordCount's scripts (the repository's, not compiled). */
const APP_DIR = fileURLToPath(new URL('../../../apps/streaming/', import.meta.url));
const ENSURE_TOOL = fileURLToPath(new URL('../../../scripts/ensure-tool.sh', import.meta.url));

/**
 * Debian's python3 where there is one: tasks may run as `nobody` (the tests run as root), who cannot
 * enter a pyenv under /root. Else whatever ensure-tool finds or installs.
 */
function findPython(): string | undefined {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'pass']);
    return '/usr/bin/python3';
  } catch {
    try {
      return execFileSync('sh', [ENSURE_TOOL, 'python3'], { encoding: 'utf8' }).trim().split('\n').at(-1);
    } catch {
      return undefined;
    }
  }
}

/**
 * Streaming jobs (Hadoop Streaming's contract) on a real 3-worker cluster: commands run with
 * /bin/sh -c in the task's working directory, as the task's account. Each output is checked against
 * a reference computed here.
 */
describe('streaming jobs on a 3-worker cluster', () => {
  let t: TestCluster;
  let local: string;
  const python = findPython();
  // makeText has tabs, CRLF lines and non-ASCII words; empty lines are added.
  const text = `${makeText(300_000, 11)}\n\r\n\nStraße 日本語\tStraße\r\n\n`;

  before(async () => {
    t = await startTestCluster({ maxAttempts: 1 });
    local = await mkdtemp(join(tmpdir(), 'minimr-streaming-'));
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
    if (local) await rm(local, { recursive: true, force: true });
  });

  const run = async (name: string, options: StreamingOptions, submit: Partial<SubmitOptions> = {}) => {
    const job = await streamingJob(options);
    return t.cluster.client.run(job.modulePath, {
      input: ['/in/text.txt'],
      output: `/out/${name}`,
      params: job.params,
      conf: job.conf,
      streaming: job.streaming,
      name: job.name,
      reducers: options.reducers,
      ...submit,
    });
  };
  const failure = async (name: string, options: StreamingOptions, submit: Partial<SubmitOptions> = {}) => {
    let status: JobStatus | undefined;
    try {
      status = await run(name, options, submit);
    } catch (err) {
      return err as Error;
    }
    assert.fail(`job ${name} should have failed, it ended ${status.state}`);
  };

  it('the Python WordCount equals the JS WordCount and an independent count', async (ctx) => {
    if (!python) return ctx.skip('no python3 on this machine (scripts/ensure-tool.sh python3 failed)');
    const status = await run('py-wc', {
      mapper: `${python} mapper.py`,
      reducer: `${python} reducer.py`,
      combiner: `${python} reducer.py`,
      files: [join(APP_DIR, 'mapper.py'), join(APP_DIR, 'reducer.py')],
      reducers: 2,
    });
    assert.equal(status.state, 'succeeded');
    assert.ok(status.mapsTotal > 3, `${status.mapsTotal} maps`);
    const streamed = (await readOutput(t.fs, '/out/py-wc')).toString('utf8');
    await t.cluster.client.run(appModule('wordcount'), { input: ['/in/text.txt'], output: '/out/js-wc', reducers: 2 });
    const js = (await readOutput(t.fs, '/out/js-wc')).toString('utf8');
    const sorted = (s: string) => s.split('\n').filter(Boolean).sort().join('\n');
    assert.equal(sorted(streamed), sorted(js));
    const want = referenceWordCount(text);
    const got = parseCounts(streamed);
    assert.equal(got.size, want.size);
    for (const [word, n] of want) assert.equal(got.get(word), n, `count of ${JSON.stringify(word)}`);
    assert.equal(got.get('Straße'), want.get('Straße'));
    assert.ok((want.get('Straße') ?? 0) >= 2);
    // The combiner ran on the map side: the shuffle got its output, fewer records than the mappers wrote.
    const combined = status.counters['user.streaming.combineOutputRecords'];
    assert.equal(status.counters.MAP_OUTPUT_RECORDS, combined);
    assert.ok(combined! < status.counters['user.streaming.combineInputRecords']!);
  });

  it('--reducers 0 writes the mapper output as the part files (a line without a tab: key and empty value)', async () => {
    const status = await run('map-only', { mapper: 'cat', reducers: 0 });
    assert.equal(status.state, 'succeeded');
    assert.equal(status.reducesTotal, 0);
    const files = (await t.fs.list('/out/map-only')).filter((f) => /part-m-/.test(f.path));
    assert.equal(files.length, status.mapsTotal);
    // Lines as `map` reads them (CRLF without its CR), in input order; one without a tab is a key with an
    // empty value, written `line<TAB>` (Hadoop's TextOutputFormat of a Text key and an empty Text value).
    const lines = text.split('\n');
    lines.pop();
    const want = lines
      .map((l) => l.replace(/\r$/, ''))
      .map((l) => (l.includes('\t') ? `${l}\n` : `${l}\t\n`))
      .join('');
    assert.equal((await readOutput(t.fs, '/out/map-only')).toString('utf8'), want);
  });

  it("feeds a last line without its newline (and a CRLF file's last CR) ended by \\n", async () => {
    await t.fs.put(Buffer.from('x\r\n\r\ny\tv\r'), '/in/no-final-newline.txt');
    const status = await run(
      'no-final-newline',
      { mapper: 'od -An -c | tr -s " " | tr -d "\\n"; echo', reducers: 0 },
      { input: ['/in/no-final-newline.txt'] },
    );
    assert.equal(status.state, 'succeeded');
    // What the mapper read, as od shows it: "x\n", "\n", "y\tv\n".
    assert.equal((await readOutput(t.fs, '/out/no-final-newline')).toString(), ' x \\n \\n y \\t v \\n\t\n');
  });

  it('passes binary, non-UTF-8 keys and values through byte for byte, sorted by their bytes', async (ctx) => {
    if (!python) return ctx.skip('no python3 on this machine');
    const script = join(local, 'binary.py');
    // Every byte 0x80-0xff as a key (descending, so the sort shows), a value with NUL, CR and 0xff.
    await writeFile(
      script,
      [
        'import sys',
        'sys.stdin.buffer.read()',
        'for b in range(0xff, 0x7f, -1):',
        "    sys.stdout.buffer.write(bytes([b, 0xc3]) + b'\\t' + bytes([0, b, 0x0d, 0xff]) + b'\\n')",
      ].join('\n'),
    );
    await t.fs.put(Buffer.from('one small line\n'), '/in/one.txt');
    const status = await run(
      'binary',
      { mapper: `${python} binary.py`, files: [script], reducers: 1 },
      { input: ['/in/one.txt'] },
    );
    assert.equal(status.state, 'succeeded');
    const want: Buffer[] = [];
    for (let b = 0x80; b <= 0xff; b++) want.push(Buffer.from([b, 0xc3, 0x09, 0, b, 0x0d, 0xff, 0x0a]));
    assert.deepEqual(await readOutput(t.fs, '/out/binary'), Buffer.concat(want));
  });

  it('a reducer may write after its input ends, more than the output buffers hold', async () => {
    const status = await run(
      'late-reducer',
      { mapper: 'cat', reducer: 'cat > /dev/null; yes "$(printf "late\\tline")" | head -n 600000', reducers: 1 },
      { input: ['/in/one.txt'] },
    );
    assert.equal(status.state, 'succeeded');
    assert.equal((await readOutput(t.fs, '/out/late-reducer')).toString(), 'late\tline\n'.repeat(600_000));
  });

  it('a mapper that exits non-zero fails the job with the end of its stderr', async () => {
    const err = await failure('exit3', {
      mapper: 'cat > /dev/null; echo "first line" >&2; echo "the mapper gave up" >&2; exit 3',
    });
    assert.match(err.message, /exited with status 3/);
    assert.match(err.message, /the mapper gave up/);
    assert.match(err.message, /first line/);
    // A reducer's too, and only the last lines of a long stderr.
    const reducerErr = await failure(
      'reducer-exit',
      { mapper: 'cat', reducer: 'cat > /dev/null; seq 1 5000 >&2; exit 2', reducers: 1 },
      { input: ['/in/one.txt'] },
    );
    assert.match(reducerErr.message, /streaming reducer `[^`]+` exited with status 2; its stderr ends:\n4991\n/);
    assert.match(reducerErr.message, /\n5000$/);
    assert.doesNotMatch(reducerErr.message, /\n4990\n/);
  });

  it('a command missing on the worker fails its attempts with the shell message', async () => {
    const err = await failure('missing-command', { mapper: 'no-such-streaming-command-x1' });
    assert.match(err.message, /exited with status 127/);
    assert.match(err.message, /no-such-streaming-command-x1: (?:\d+: )?(?:not found|command not found)/);
  });

  it('a silent mapper is killed after the progress timeout', async () => {
    const started = Date.now();
    const err = await failure('hang', { mapper: 'sleep 60', conf: ['streaming.taskTimeoutMs=800'] });
    assert.match(err.message, /ETIMEOUT|no output/);
    assert.match(err.message, /killed/);
    assert.ok(Date.now() - started < 30_000, 'killed long before the mapper would have ended');
  });

  it("killing a job kills its attempts' commands (in process groups of their own, they outlive the task process)", async () => {
    const marker = '77.35';
    const job = await streamingJob({ mapper: `cat > /dev/null; exec sleep ${marker}` });
    const client = t.cluster.client;
    const jobId = await client.submit(job.modulePath, {
      input: ['/in/text.txt'],
      output: '/out/killed',
      reducers: 1,
      params: job.params,
      streaming: job.streaming,
    });
    await waitFor('the command to run', () => (sleepers(marker).length > 0 ? true : undefined), 30_000);
    await client.kill(jobId);
    await waitFor('the command to be gone', () => (sleepers(marker).length === 0 ? true : undefined), 10_000);
  });

  it('--cmdenv reaches the command, in a small environment without MINIMR_ settings', async () => {
    const status = await run(
      'cmdenv',
      {
        mapper:
          'cat > /dev/null; printf "greeting\\t%s\\n" "$GREETING"; printf "minimr\\t%s\\n" "$(env | grep -c ^MINIMR_)"; ' +
          'printf "home\\t%s\\n" "$([ "$HOME" = "$PWD" ] && echo cwd)"',
        cmdenv: ['GREETING=hello world'],
        reducers: 0,
      },
      { input: ['/in/one.txt'] },
    );
    assert.equal(status.state, 'succeeded');
    assert.equal((await readOutput(t.fs, '/out/cmdenv')).toString(), 'greeting\thello world\nminimr\t0\nhome\tcwd\n');
  });

  it('--file puts the file in the working directory, readable by the task account', async () => {
    const lookup = join(local, 'lookup.txt');
    await writeFile(lookup, 'shipped\tcontent\n');
    const status = await run(
      'file',
      { mapper: 'cat > /dev/null; cat lookup.txt', files: [lookup], reducers: 0 },
      { input: ['/in/one.txt'] },
    );
    assert.equal(status.state, 'succeeded');
    assert.equal((await readOutput(t.fs, '/out/file')).toString(), 'shipped\tcontent\n');
  });

  it("counts the command's memory in the attempt's, and fails one beyond its grant", async (ctx) => {
    if (!python) return ctx.skip('no python3 on this machine');
    const hold = (mb: number) =>
      `${python} -c "import sys,time; sys.stdin.buffer.read(); x = b'x' * (${mb} << 20); time.sleep(1.2)"`;
    const status = await run('memory', { mapper: hold(48), reducers: 0 }, { input: ['/in/one.txt'] });
    assert.equal(status.state, 'succeeded');
    const [attempt] = await t.cluster.client.attempts(status.jobId);
    const command = attempt!.counters.COMMAND_PEAK_RSS_BYTES ?? 0;
    assert.ok(command >= 48 << 20, `command peak ${command}`);
    assert.ok((attempt!.counters.PEAK_RSS_BYTES ?? 0) > command);
    const err = await failure('too-much-memory', { mapper: hold(900), reducers: 0 }, { input: ['/in/one.txt'] });
    assert.match(err.message, /beyond its memory/);
  });

  it('refuses a --file that does not exist before submitting', async () => {
    const missing = join(local, 'no-such-mapper.py');
    await assert.rejects(streamingJob({ mapper: 'cat', files: [missing] }), isCode('EBADPATH', /no such file/));
    const r = await runMinimr([
      'streaming',
      '--jobtracker',
      t.cluster.url,
      '--input',
      '/in/text.txt',
      '--output',
      '/out/never',
      '--mapper',
      'cat',
      '--file',
      missing,
    ]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /EBADPATH/);
    assert.ok(r.stderr.includes(missing), r.stderr);
    await assert.rejects(t.fs.stat('/out/never'));
  });

  it('minimr streaming runs a job from the command line, named after its commands', async () => {
    await t.fs.put(Buffer.from('b\na\nc\tz\n'), '/in/abc.txt');
    const r = await runMinimr([
      'streaming',
      '--jobtracker',
      t.cluster.url,
      '--secret-file',
      t.cluster.jobTracker.secretFile,
      '--input',
      '/in/abc.txt',
      '--output',
      '/out/cli',
      '--mapper',
      'cat',
      '--reducer',
      'cat',
    ]);
    assert.equal(r.code, 0, r.stderr);
    // Sorted by key; a line without a tab is a key with an empty value, written `key<TAB>`.
    assert.equal((await readOutput(t.fs, '/out/cli')).toString(), 'a\t\nb\t\nc\tz\n');
    const jobs = await t.cluster.client.list();
    assert.ok(
      jobs.some((j) => j.name === 'streaming: cat | cat'),
      JSON.stringify(jobs.map((j) => j.name)),
    );
  });

  it('any other job still may not start processes', async () => {
    await assert.rejects(
      t.cluster.client.run(fixtureModule('sandbox-probe'), { output: '/out/spawn', params: { probe: 'spawn' } }),
      (err: Error) => {
        assert.match(err.message, /ERR_ACCESS_DENIED/);
        assert.match(err.message, /ChildProcess/);
        return true;
      },
    );
  });

  it('runs the streaming module, not the one a client sent, and refuses MINIMR_ in --cmdenv', async () => {
    const job = await streamingJob({ mapper: 'cat > /dev/null; echo ok', reducers: 0 });
    const status = await t.cluster.client.run(appModule('wordcount'), {
      input: ['/in/one.txt'],
      output: '/out/swapped',
      params: job.params,
      streaming: job.streaming,
      reducers: 0,
    });
    assert.equal(status.state, 'succeeded');
    assert.equal((await readOutput(t.fs, '/out/swapped')).toString(), 'ok\t\n');
    await assert.rejects(streamingJob({ mapper: 'cat', cmdenv: ['MINIMR_SECRET_FILE=/x'] }), isCode('EBADJOB'));
  });
});

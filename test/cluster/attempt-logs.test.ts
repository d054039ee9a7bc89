import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import type { JobClient } from '../../src/runtime/index.js';
import { MAX_LOG_READ_BYTES } from '../../src/runtime/wire/index.js';
import { AttemptLog, TaskOutputRouter } from '../../src/runtime/worker/attempt-logs.js';
import { fixtureModule, startTestCluster, waitFor, type TestCluster } from '../helpers/cluster.js';
import { startGate } from '../helpers/gate.js';
import { MINIMR_BIN as BIN } from '../helpers/cli.js';

/**
 * Each attempt's stdout and stderr reach a file of its own on its worker, even when one task
 * process runs several attempts one after another (one worker, one map slot: warm reuse), and the
 * JobTracker serves them to `minimr job logs`.
 */
describe('per-attempt logs on a real cluster', () => {
  let t: TestCluster;
  let client: JobClient;
  const files = [0, 1, 2, 3].map((f) => Array.from({ length: 40 + f }, (_, j) => `f${f} line ${j}`));

  before(async () => {
    t = await startTestCluster({ workers: 1, mapSlots: 1, reduceSlots: 1, replication: 1 });
    client = t.cluster.client;
    for (const [f, lines] of files.entries())
      await t.fs.put(Buffer.from(lines.map((l) => `${l}\n`).join('')), `/in/f${f}.txt`);
  });
  after(async () => {
    await t?.stop();
  });

  it("a map attempt's stdout is exactly what it printed, whatever process ran it", async () => {
    const status = await client.run(fixtureModule('chatty'), { input: ['/in'], output: '/out/chatty', reducers: 1 });
    assert.equal(status.state, 'succeeded');
    const attempts = await client.attempts(status.jobId);
    const maps = attempts.filter((a) => a.kind === 'map');
    assert.equal(maps.length, 4);
    const seen = new Set<number>();
    for (const a of maps) {
      const slice = await client.attemptLog(a.attemptId, 'stdout');
      assert.equal(slice.workerId, a.workerId);
      const f = files.findIndex((lines) => lines[0] !== undefined && slice.text.includes(`read ${lines[0]}\n`));
      assert.ok(f >= 0, `stdout of ${a.attemptId}: ${slice.text.slice(0, 200)}`);
      seen.add(f);
      assert.equal(slice.text, files[f]!.map((l) => `${a.attemptId} read ${l}\n`).join(''));
      assert.equal(slice.size, Buffer.byteLength(slice.text));
    }
    assert.equal(seen.size, 4, 'each map printed its own split');
    const reduce = attempts.find((a) => a.kind === 'reduce')!;
    const err = await client.attemptLog(reduce.attemptId, 'stderr');
    // The reduce's keys are the first words of the lines: f0..f3, in key order.
    assert.equal(err.text, ['f0', 'f1', 'f2', 'f3'].map((k) => `reduce saw ${k}\n`).join(''));
  });

  it("a failed attempt's stderr ends with how it ended; the CLI prints both streams", async () => {
    const status = await client.run(fixtureModule('chatty'), {
      input: ['/in/f0.txt'],
      output: '/out/chatty-fail',
      params: { failFirst: 1 },
      reducers: 1,
    });
    assert.equal(status.state, 'succeeded');
    const failed = (await client.attempts(status.jobId)).find((a) => a.state === 'failed');
    assert.ok(failed, 'the first map attempt failed');
    const err = await client.attemptLog(failed.attemptId, 'stderr');
    assert.match(err.text, new RegExp(`^${failed.attemptId} fails now\\n`));
    assert.match(err.text, /\[minimr\] attempt failed: ETASK: .*failing on purpose/);
    const out = await promisify(execFile)(process.execPath, [
      BIN,
      'job',
      'logs',
      failed.attemptId,
      '--jobtracker',
      t.cluster.url,
      '--secret-file',
      t.cluster.jobTracker.secretFile,
    ]);
    assert.match(
      out.stdout,
      new RegExp(
        `==> stdout of ${failed.attemptId} on worker-0 \\(bytes 0-\\d+ ` +
          `of \\d+\\) <==\\n${failed.attemptId} read f0 line 0\\n`,
      ),
    );
    assert.match(out.stdout, /==> stderr of .* <==\n.*fails now\n/);
  });

  it("a killed attempt's stderr keeps all the task wrote, in order, then how it ended", async () => {
    // More than a pipe holds (64 KiB): some of it is still on its way to the worker when the process dies.
    const stderrLines = 3000;
    const gate = await startGate();
    try {
      await t.fs.put(Buffer.from('one line to map\n'), '/in-killed/k.txt');
      const jobId = await client.submit(fixtureModule('gated-wordcount'), {
        input: ['/in-killed'],
        output: '/out/killed',
        params: { gateUrl: gate.url, stderrLines },
      });
      // At the gate, the map has written all its lines: it is killed with the job while it runs.
      const attemptId = await waitFor('the map at the gate', () => [...gate.held.keys()][0]);
      await client.kill(jobId);
      await waitFor('its task process gone', () => (gate.gone.has(attemptId) ? true : undefined), 20_000);
      const written = Array.from(
        { length: stderrLines },
        (_, i) => `${attemptId} says ${i + 1} of ${stderrLines}\n`,
      ).join('');
      const complete = (text: string) => text.startsWith(written) && text.length > written.length;
      // The worker writes its line once the process is gone: wait for it, but not forever (the bug left it out).
      const read = () => client.attemptLog(attemptId, 'stderr', { offset: 0, length: MAX_LOG_READ_BYTES });
      let seen = await read();
      for (const deadline = Date.now() + 10_000; !complete(seen.text) && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        seen = await read();
      }
      const tail = JSON.stringify(seen.text.slice(-300));
      assert.ok(seen.text.startsWith(written), `all the task's lines, in order, first: the log ends ${tail}`);
      assert.match(
        seen.text.slice(written.length),
        /^\[minimr\] attempt killed: EKILLED: [^\n]+\n$/,
        `the log ends ${tail}`,
      );
      assert.equal(seen.size, Buffer.byteLength(seen.text));
    } finally {
      await gate.close();
    }
  });

  it('`job logs` on a terminal shows control characters as escapes (newlines and tabs kept); piped, the bytes as written', async () => {
    const hostile = 'esc \x1b[2J\x1b]0;owned\x07 cr a\rb tab\tc del \x7f end';
    await t.fs.put(Buffer.from(`${hostile}\nplain line\n`), '/in-escape/e.txt');
    const status = await client.run(fixtureModule('chatty'), {
      input: ['/in-escape'],
      output: '/out/chatty-escape',
      reducers: 1,
    });
    assert.equal(status.state, 'succeeded');
    const map = (await client.attempts(status.jobId)).find((a) => a.kind === 'map')!;
    const args = [
      BIN,
      'job',
      'logs',
      map.attemptId,
      '--stream',
      'stdout',
      '--jobtracker',
      t.cluster.url,
      '--secret-file',
      t.cluster.jobTracker.secretFile,
    ];
    const written = `${map.attemptId} read ${hostile}\n${map.attemptId} read plain line\n`;
    const escaped =
      `${map.attemptId} read esc \\x1b[2J\\x1b]0;owned\\x07 cr a\\rb tab\tc del \\x7f end\n` +
      `${map.attemptId} read plain line\n`;
    // Piped (as `cat`): exactly what the task printed, for files and tools.
    const piped = await promisify(execFile)(process.execPath, args);
    assert.equal(piped.stdout, written);
    // --escape when piped, as on a terminal.
    const forced = await promisify(execFile)(process.execPath, [...args, '--escape']);
    assert.equal(forced.stdout, escaped);
    // On a terminal (script(1) gives the command one): escapes, and nothing that drives the terminal.
    const command = [process.execPath, ...args].map((a) => `'${a}'`).join(' ');
    const tty = await promisify(execFile)('script', ['-qec', command, '/dev/null']);
    // The terminal turns each newline into CR LF; every other CR would be the task's.
    const seen = tty.stdout.replace(/\r\n/g, '\n');
    assert.equal(seen, escaped);
    assert.deepEqual(
      [...seen].filter((c) => c < ' ' && c !== '\n' && c !== '\t'),
      [],
      'no control character but newlines and tabs reaches the terminal',
    );
  });

  it('an unknown attempt or stream is a clear error', async () => {
    await assert.rejects(
      client.attemptLog('attempt_nope', 'stdout'),
      (e: unknown) => e instanceof MinimrError && e.code === 'ENOATTEMPT' && /minimr job attempts/.test(e.message),
    );
    const attempts = await client.attempts((await client.list())[0]!.jobId);
    await assert.rejects(
      client.attemptLog(attempts[0]!.attemptId, 'stdin' as 'stdout'),
      (e: unknown) => e instanceof MinimrError && e.code === 'EBADREQUEST',
    );
  });
});

/**
 * The router on its own, with a real process killed as the worker kills one: its pipes usually end
 * before Node reports its exit, and the worker ends the attempt's log from its own exit listener.
 */
describe("a task process's output and the worker's last lines", () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'minimr-router-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  // Writes `lines` numbered lines on stderr (more than a pipe holds), says so on IPC once they are all
  // in the pipe (the write's callback: a pipe's writes may be queued in the process), then waits to be killed.
  const lines = 3000;
  const script =
    `let text = ''; for (let i = 1; i <= ${lines}; i++) text += 'task line ' + i + '\\n';` +
    "process.stderr.write(text, () => process.send('written')); setInterval(() => undefined, 1000);";
  const written = Array.from({ length: lines }, (_, i) => `task line ${i + 1}\n`).join('');

  for (const when of ['from its exit listener', 'before it exits'] as const) {
    it(`a killed process's log has all it wrote, then the worker's lines (ended ${when})`, async () => {
      const router = new TaskOutputRouter();
      const attemptId = `killed-${when.replace(/ /g, '-')}`;
      const log = await AttemptLog.open(root, 'job_router', attemptId);
      const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
      router.attach(child);
      router.assign(child, log);
      const verdict = ['attempt killed: EKILLED: killed by the test', 'a second line'];
      const exited = once(child, 'exit');
      // As the worker's: registered after the router's (which attach made).
      if (when === 'from its exit listener') child.once('exit', () => log.end(verdict));
      await once(child, 'message');
      child.kill('SIGKILL');
      if (when === 'before it exits') log.end(verdict);
      await exited;
      const stderr = join(root, 'job_router', attemptId, 'stderr');
      const expected = `${written}${verdict.map((l) => `[minimr] ${l}\n`).join('')}`;
      // The file is complete once the log closed: wait for it, but not forever.
      let seen = '';
      for (const deadline = Date.now() + 10_000; seen !== expected && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        seen = await readFile(stderr, 'utf8');
      }
      assert.ok(
        seen.startsWith(written),
        `all the task's lines, in order, first: the file ends ${JSON.stringify(seen.slice(-200))}`,
      );
      assert.equal(seen.slice(written.length), verdict.map((l) => `[minimr] ${l}\n`).join(''));
    });
  }
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import type { JobClient } from '../../src/runtime/index.js';
import { fixtureModule, startTestCluster, type TestCluster } from '../helpers/cluster.js';
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

import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/log.js';
import { lookupAccount, sandboxedEnv, TaskSandboxes, type JobSandbox } from '../../src/runtime/worker/sandbox.js';

const runsAsRoot = process.getuid?.() === 0;

describe('task sandboxes (worker/sandbox.ts)', () => {
  let dir: string;
  let sandboxes: TaskSandboxes;
  let sandbox: JobSandbox;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-task-sandbox-'));
    for (const sub of ['shuffle', 'blocks', 'logs', 'jobs/modules']) await mkdir(join(dir, sub), { recursive: true });
    await writeFile(join(dir, 'jobs', 'modules', 'job-0123456789abcdef.mjs'), 'export default {};\n');
    sandboxes = new TaskSandboxes({
      dataDir: dir,
      shuffleRoot: join(dir, 'shuffle'),
      logger: createLogger('test', 'silent'),
    });
    await sandboxes.init();
    sandbox = await sandboxes.prepare('job_1', 'root', join(dir, 'jobs', 'modules', 'job-0123456789abcdef.mjs'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("gives a task none of the worker's MINIMR_* settings but those it reads, and its work dir as TMPDIR", () => {
    const env = sandboxedEnv(
      {
        PATH: '/bin',
        MINIMR_SECRET_FILE: '/etc/minimr/secret',
        MINIMR_JOIN_TOKEN: 'minimr-join-1.x',
        MINIMR_CREDENTIAL_FILE: '/c',
        MINIMR_LOG_LEVEL: 'warn',
      },
      sandbox,
    );
    assert.deepEqual(
      Object.keys(env).filter((k) => k.startsWith('MINIMR_')),
      ['MINIMR_LOG_LEVEL'],
    );
    assert.equal(env.PATH, '/bin');
    assert.equal(env.TMPDIR, sandbox.workDir);
  });

  it("lets a task read its sandbox, its job's map outputs and the runtime's code, and write only work and map outputs", () => {
    const args = sandboxes.execArgv(sandbox, {});
    assert.ok(args.includes('--experimental-permission'));
    assert.ok(!args.some((a) => a === '--allow-child-process' || a === '--allow-worker' || a === '--allow-wasi'));
    const reads = args.filter((a) => a.startsWith('--allow-fs-read=')).map((a) => a.slice('--allow-fs-read='.length));
    const writes = args
      .filter((a) => a.startsWith('--allow-fs-write='))
      .map((a) => a.slice('--allow-fs-write='.length));
    assert.deepEqual(writes, [sandbox.workDir, join(dir, 'shuffle', 'job_1'), '/proc/self/clear_refs']);
    for (const path of [sandbox.dir, join(dir, 'shuffle', 'job_1'), '/proc/self/status'])
      assert.ok(reads.includes(path));
    // Nothing of the worker's own: not its directory, blocks, logs, module cache or the whole shuffle root.
    for (const path of reads) {
      assert.ok(!(dir.startsWith(path) && path.length <= dir.length), `${path} would cover the worker directory`);
      for (const own of ['blocks', 'logs', 'jobs']) assert.ok(!path.startsWith(join(dir, own)), path);
      assert.notEqual(path, join(dir, 'shuffle'));
    }
    assert.equal(sandbox.modulePath, join(sandbox.dir, 'job-0123456789abcdef.mjs'));
  });

  it('runs tasks as nobody (uid 65534) where the worker is root, the work and map output dirs theirs', async (t) => {
    if (!runsAsRoot) {
      assert.equal(sandbox.account, undefined, 'a worker that is not root runs tasks as itself');
      t.skip('not root');
      return;
    }
    assert.deepEqual(sandbox.account, await lookupAccount('nobody'));
    assert.equal(sandbox.account?.uid, 65534);
    for (const own of [sandbox.workDir, sandbox.shuffleDir]) assert.equal((await stat(own)).uid, 65534);
    // The rest of the sandbox is the worker's: the task cannot replace its module or its input links.
    assert.equal((await stat(sandbox.dir)).uid, 0);
    assert.equal((await stat(sandbox.inputDir)).uid, 0);
    assert.equal((await stat(join(dir, 'blocks'))).mode & 0o777, 0o700);
  });

  it("a spare's process may touch its own sandbox and its links only; a job adopting it gets that sandbox", async () => {
    const module = join(dir, 'jobs', 'modules', 'job-0123456789abcdef.mjs');
    const spare = await sandboxes.makeSpare();
    assert.equal(spare.jobId, '');
    assert.equal(spare.shuffleLinks, join(spare.dir, 'shuffle'));
    assert.match(spare.dir, /\/sandbox\/spare-\d+$/);
    const args = sandboxes.execArgv(spare, {});
    const writes = args
      .filter((a) => a.startsWith('--allow-fs-write='))
      .map((a) => a.slice('--allow-fs-write='.length));
    assert.deepEqual(writes, [spare.workDir, spare.shuffleLinks, '/proc/self/clear_refs']);
    const reads = args.filter((a) => a.startsWith('--allow-fs-read=')).map((a) => a.slice('--allow-fs-read='.length));
    // No job's map outputs, not the shuffle root: only what the links will lead to.
    for (const path of reads) assert.ok(!path.startsWith(join(dir, 'shuffle')), path);
    if (runsAsRoot) {
      // The links are the worker's: the task account follows them and cannot replace them.
      assert.equal((await stat(spare.shuffleLinks!)).uid, 0);
      assert.equal((await stat(spare.shuffleLinks!)).mode & 0o777, 0o750);
      assert.equal((await stat(spare.workDir)).uid, 65534);
    }

    const adopted = await sandboxes.prepare('job_2', 'root', module, undefined, spare);
    assert.equal(adopted.dir, spare.dir);
    assert.equal(adopted.workDir, spare.workDir);
    assert.equal(adopted.modulePath, join(spare.dir, 'job-0123456789abcdef.mjs'));
    assert.equal(adopted.shuffleDir, join(dir, 'shuffle', 'job_2'));
    assert.equal(adopted.shuffleLinks, undefined, "the job's other processes use the shuffle root itself");
    assert.ok((await lstat(join(spare.shuffleLinks!, 'job_2'))).isSymbolicLink());
    assert.equal(await readlink(join(spare.shuffleLinks!, 'job_2')), adopted.shuffleDir);
    assert.ok((await stat(adopted.shuffleDir)).isDirectory());
    // Its next launches find the same sandbox; the spare is not adopted twice.
    assert.equal(
      (await sandboxes.prepare('job_2', 'root', module, undefined, await sandboxes.makeSpare())).dir,
      spare.dir,
    );
    await sandboxes.endAttempt('job_2', 'attempt_x');
    await sandboxes.remove('job_2');
    assert.equal(existsSync(spare.dir), false, "the adopted spare's sandbox goes with its job");
  });

  it('a streaming job does not adopt a spare (its processes start commands); an unadopted spare is removed', async () => {
    const module = join(dir, 'jobs', 'modules', 'job-0123456789abcdef.mjs');
    const spare = await sandboxes.makeSpare();
    const streaming = await sandboxes.prepare('job_3', 'root', module, { files: async () => [] }, spare);
    assert.notEqual(streaming.dir, spare.dir);
    assert.equal(streaming.childProcesses, true);
    assert.ok(existsSync(spare.dir));
    await sandboxes.removeSpare(spare);
    assert.equal(existsSync(spare.dir), false);
    await sandboxes.remove('job_3');
  });

  it('looks accounts up on the host: root is uid 0, an unknown name or a bad one none', async () => {
    assert.equal((await lookupAccount('root'))?.uid, 0);
    assert.equal(await lookupAccount('no-such-user-minimr-test'), undefined);
    assert.equal(await lookupAccount('-x'), undefined);
  });
});

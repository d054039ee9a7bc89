import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FsClient } from '../../src/storage/index.js';
import {
  appModule,
  assertCountsEqual,
  fixtureModule,
  isCode,
  makeText,
  readAll,
  readOutput,
  startTestCluster,
  waitFor,
  type TestCluster,
} from '../helpers/cluster.js';

/** Every file under `dir` with its bytes, by path. */
async function snapshot(fs: FsClient, dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const stat = await fs.stat(dir);
  if (stat.type === 'file') {
    files.set(dir, await readAll(fs.cat(dir)));
    return files;
  }
  for (const f of await fs.list(dir)) {
    if (f.type === 'dir') for (const [p, b] of await snapshot(fs, f.path)) files.set(p, b);
    else files.set(f.path, await readAll(fs.cat(f.path)));
  }
  return files;
}

function assertSameFiles(got: Map<string, Buffer>, want: Map<string, Buffer>): void {
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
  for (const [path, bytes] of want) assert.ok(got.get(path)?.equals(bytes), `${path} changed`);
}

/** Staging directories (`.NAME.overwrite-JOBID`) left in `dir`. */
async function stagingLeft(fs: FsClient, dir: string): Promise<string[]> {
  return (await fs.list(dir)).map((f) => f.path).filter((p) => /\/\.[^/]+\.overwrite-/.test(p));
}

/**
 * `--overwrite` replaces the previous output only when the new one commits (one NameNode step),
 * and leaves it whole when the job fails or is killed (issue 35, item 6).
 */
describe('submit --overwrite', () => {
  let t: TestCluster;
  const oldText = makeText(150_000, 11);
  const newText = makeText(200_000, 12);

  before(async () => {
    t = await startTestCluster();
    await t.fs.put(Buffer.from(oldText), '/in/old.txt');
    await t.fs.put(Buffer.from(newText), '/in/new.txt');
  });
  after(async () => {
    await t?.stop();
  });

  /** A previous output at `out`: WordCount of the old text in 2 parts, and a file of the user's. */
  async function previousOutput(out: string): Promise<Map<string, Buffer>> {
    const client = t.cluster.client;
    const id = await client.submit(appModule('wordcount'), { input: ['/in/old.txt'], output: out, reducers: 2 });
    assert.equal((await client.waitForCompletion(id)).state, 'succeeded');
    await t.fs.put(Buffer.from('kept by hand\n'), `${out}/notes.txt`);
    const files = await snapshot(t.fs, out);
    assert.ok(files.has(`${out}/part-r-00001`) && files.has(`${out}/_SUCCESS`));
    return files;
  }

  it('keeps the previous output byte for byte when the job fails', async () => {
    const before = await previousOutput('/keep-failed');
    const client = t.cluster.client;
    const id = await client.submit(fixtureModule('failing-map'), {
      input: ['/in/new.txt'],
      output: '/keep-failed',
      overwrite: true,
      maxAttempts: 1,
    });
    await assert.rejects(client.waitForCompletion(id), isCode('EJOBFAILED', /boom in map on purpose/));
    assertSameFiles(await snapshot(t.fs, '/keep-failed'), before);
    assert.deepEqual(await stagingLeft(t.fs, '/'), []);
  });

  it('keeps the previous output byte for byte when the job is killed', async () => {
    const before = await previousOutput('/keep-killed');
    const client = t.cluster.client;
    const id = await client.submit(fixtureModule('slow-wordcount'), {
      input: ['/in/new.txt'],
      output: '/keep-killed',
      overwrite: true,
      reducers: 2,
      params: { mapDelayMs: 30, reduceDelayMs: 30 },
    });
    // Killed once some map has committed into the staging directory: there is something to discard.
    await waitFor('a map to finish', async () => ((await client.status(id)).mapsCompleted > 0 ? true : undefined));
    await client.kill(id);
    await assert.rejects(client.waitForCompletion(id), isCode('EJOBKILLED'));
    assertSameFiles(await snapshot(t.fs, '/keep-killed'), before);
    assert.deepEqual(await stagingLeft(t.fs, '/'), []);
  });

  it('replaces the previous output when the job succeeds, with none of the old files left', async () => {
    await previousOutput('/replaced');
    const client = t.cluster.client;
    const id = await client.submit(appModule('wordcount'), {
      input: ['/in/new.txt'],
      output: '/replaced',
      overwrite: true,
      reducers: 1,
    });
    assert.equal((await client.waitForCompletion(id)).state, 'succeeded');
    const names = (await t.fs.list('/replaced')).map((f) => f.path).sort();
    assert.deepEqual(names, ['/replaced/_SUCCESS', '/replaced/part-r-00000']);
    assertCountsEqual(await readOutput(t.fs, '/replaced'), newText);
    assert.deepEqual(await stagingLeft(t.fs, '/'), []);
  });

  it('replaces a file at the output path when the job succeeds', async () => {
    await t.fs.put(Buffer.from('not a directory\n'), '/a-file');
    const client = t.cluster.client;
    const id = await client.submit(appModule('wordcount'), {
      input: ['/in/new.txt'],
      output: '/a-file',
      overwrite: true,
    });
    assert.equal((await client.waitForCompletion(id)).state, 'succeeded');
    assert.equal((await t.fs.stat('/a-file')).type, 'dir');
    assertCountsEqual(await readOutput(t.fs, '/a-file'), newText);
  });

  it('still refuses an existing output without --overwrite, leaving it as it was', async () => {
    const before = await previousOutput('/refused');
    await assert.rejects(
      t.cluster.client.submit(appModule('wordcount'), { input: ['/in/new.txt'], output: '/refused' }),
      isCode('EOUTPUTEXISTS', /--overwrite/),
    );
    assertSameFiles(await snapshot(t.fs, '/refused'), before);
  });
});

/**
 * The block store as a WebHDFS server, on a real cluster, checked with clients that share no code
 * with it: `curl -L` following WebHDFS's redirects and the `webhdfs` npm package. Bytes are checked
 * against what FsClient stored (and what they wrote against FsClient's reading), listings against
 * FsClient's, permissions as the block store's (a 700 directory refuses another user; no
 * credentials, or a user.name= that is not the authenticated user, are refused). Then minimr's own
 * WebHDFS store (src/storage/stores/webhdfs-store.ts) against that server: list, stat, ranged reads
 * pinned to a version, the output committer, and its errors (EAUTH, ESTORE, ECHANGED).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { MinimrError } from '../../src/errors.js';
import { createWebHdfsStore, type WebHdfsStore } from '../../src/storage/stores/index.js';
import { freePort, readAll, startTestCluster, type TestCluster } from '../helpers/cluster.js';

const run = promisify(execFile);

/** The part of the `webhdfs` package (no types of its own) these tests use. */
interface WebHdfsClient {
  readdir(path: string, cb: (err: Error | null, files?: Array<Record<string, unknown>>) => void): void;
  readFile(path: string, cb: (err: Error | null, data?: Buffer) => void): void;
  writeFile(path: string, data: Buffer, opts: Record<string, unknown>, cb: (err: Error | null) => void): void;
  mkdir(path: string, mode: string, cb: (err: Error | null) => void): void;
}
interface WebHdfsLibrary {
  createClient(opts: Record<string, unknown>, requestParams?: Record<string, unknown>): WebHdfsClient;
}
const webhdfsLib = createRequire(import.meta.url)('webhdfs') as WebHdfsLibrary;

function promised<T>(call: (cb: (err: Error | null, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => call((err, value) => (err ? reject(err) : resolve(value as T))));
}

describe('WebHDFS on a real cluster', () => {
  let t: TestCluster;
  let base: string;
  let authority: string;
  let password: string;
  let admin: string;
  let bobKey: string;
  let carolKey: string;
  const data = randomBytes(300_000); // several 64 KiB blocks

  /** curl, as a WebHDFS user would run it; answers stdout and the HTTP status of the last response. */
  async function curl(args: string[]): Promise<{ status: number; body: Buffer }> {
    const { stdout } = await run('curl', ['-sS', '-w', '\n%{http_code}', ...args], {
      encoding: 'buffer',
      maxBuffer: 64 * 1024 * 1024,
    });
    const cut = stdout.lastIndexOf(0x0a);
    return { status: Number(stdout.subarray(cut + 1).toString()), body: stdout.subarray(0, cut) };
  }

  before(async () => {
    t = await startTestCluster({ workers: 2 });
    base = t.cluster.url.replace(/^ws/, 'http');
    authority = new URL(base).host;
    password = t.cluster.jobTracker.webPassword;
    await t.fs.mkdir('/wh', { parents: true });
    await t.fs.chmod('/wh', '777');
    await t.fs.put(data, '/wh/data.bin');
    admin = (await t.fs.stat('/wh/data.bin')).owner;
    bobKey = (await t.cluster.client.addUser('bob')).key;
    carolKey = (await t.cluster.client.addUser('carol')).key;
  });
  after(async () => {
    await t?.stop();
  });

  it('refuses a request without credentials, and a user.name= that is not the signed-in user', async () => {
    const bare = await curl([`${base}/webhdfs/v1/wh?op=LISTSTATUS&user.name=${admin}`]);
    assert.equal(bare.status, 401);
    assert.equal(JSON.parse(bare.body.toString()).RemoteException.exception, 'SecurityException');
    const other = await curl(['-u', `bob:${bobKey}`, `${base}/webhdfs/v1/wh?op=LISTSTATUS&user.name=${admin}`]);
    assert.equal(other.status, 403);
    const remote = JSON.parse(other.body.toString()).RemoteException;
    assert.equal(remote.exception, 'SecurityException');
    assert.match(remote.message, /Usernames not matched: name=\S+ != expected=bob/);
    const wrongKey = await curl(['-u', `bob:${carolKey}`, `${base}/webhdfs/v1/wh?op=LISTSTATUS`]);
    assert.equal(wrongKey.status, 401);
  });

  it('curl -L reads what FsClient stored, whole and by offset and length, after a 307', async () => {
    const first = await curl([
      '-u',
      `bob:${bobKey}`,
      '-o',
      '/dev/null',
      '-D',
      '-',
      `${base}/webhdfs/v1/wh/data.bin?op=OPEN`,
    ]);
    assert.equal(first.status, 307);
    assert.match(first.body.toString(), /^location: http:\/\/\S+\/webhdfs\/v1\/wh\/data\.bin\?op=OPEN&\S*datatoken=/im);
    // As a NameNode redirects to a DataNode: to the data port of a worker holding the first block.
    const redirectPort = Number(/^location: http:\/\/[^:/]+:(\d+)\//im.exec(first.body.toString())![1]);
    const holders = (await t.fs.getBlocks('/wh/data.bin'))[0]!.locations.map((l) => l.dataPort);
    assert.ok(holders.includes(redirectPort), `redirected to port ${redirectPort}, a holder of block 0 (${holders})`);
    const fromOffset = await curl([
      '-u',
      `bob:${bobKey}`,
      '-o',
      '/dev/null',
      '-D',
      '-',
      `${base}/webhdfs/v1/wh/data.bin?op=OPEN&offset=200000`,
    ]);
    const block3 = (await t.fs.getBlocks('/wh/data.bin')).find(
      (b) => b.offset <= 200_000 && 200_000 < b.offset + b.length,
    )!;
    const offsetPort = Number(/^location: http:\/\/[^:/]+:(\d+)\//im.exec(fromOffset.body.toString())![1]);
    assert.ok(
      block3.locations.some((l) => l.dataPort === offsetPort),
      'a holder of the block at the offset',
    );
    const whole = await curl(['-L', '-u', `bob:${bobKey}`, `${base}/webhdfs/v1/wh/data.bin?op=OPEN`]);
    assert.equal(whole.status, 200);
    assert.ok(whole.body.equals(data));
    const slice = await curl([
      '-L',
      '-u',
      `bob:${bobKey}`,
      `${base}/webhdfs/v1/wh/data.bin?op=OPEN&offset=65000&length=70000`,
    ]);
    assert.ok(slice.body.equals(data.subarray(65_000, 135_000)));
    // A grant is for the read it was issued for: another range with it is refused (the worker asks the JobTracker).
    const location = /^location: (\S+)/im.exec(first.body.toString())![1]!;
    const forged = await curl([location.replace('op=OPEN', 'op=OPEN&offset=5')]);
    assert.equal(forged.status, 403);
    assert.equal(JSON.parse(forged.body.toString()).RemoteException.exception, 'InvalidToken');
  });

  it('LISTSTATUS and GETFILESTATUS answer what FsClient lists, in WebHDFS JSON', async () => {
    const listed = await curl(['-u', `${admin}:${password}`, `${base}/webhdfs/v1/wh?op=LISTSTATUS`]);
    assert.equal(listed.status, 200);
    const statuses = JSON.parse(listed.body.toString()).FileStatuses.FileStatus as Array<Record<string, unknown>>;
    const expected = await t.fs.list('/wh');
    assert.deepEqual(
      statuses.map((s) => [s.pathSuffix, s.type, s.length, s.owner, s.group, s.permission, s.replication, s.blockSize]),
      expected.map((s) => [
        s.path.split('/').pop(),
        s.type === 'dir' ? 'DIRECTORY' : 'FILE',
        s.type === 'dir' ? 0 : s.length,
        s.owner,
        s.group,
        (s.mode & 0o1777).toString(8),
        s.type === 'dir' ? 0 : s.replication,
        s.type === 'dir' ? 0 : s.blockSize,
      ]),
    );
    const stat = await curl(['-u', `${admin}:${password}`, `${base}/webhdfs/v1/wh?op=GETFILESTATUS`]);
    const dir = JSON.parse(stat.body.toString()).FileStatus;
    assert.deepEqual([dir.type, dir.permission, dir.pathSuffix], ['DIRECTORY', '777', '']);
    const missing = await curl(['-u', `${admin}:${password}`, `${base}/webhdfs/v1/nothing?op=GETFILESTATUS`]);
    assert.equal(missing.status, 404);
    assert.deepEqual(
      JSON.parse(missing.body.toString()).RemoteException.javaClassName,
      'java.io.FileNotFoundException',
    );
  });

  it('curl -L -T writes a file with the two-step CREATE; FsClient reads the same bytes', async () => {
    const local = join(t.dir, 'upload.bin');
    const upload = randomBytes(200_000);
    await writeFile(local, upload);
    const step1 = await curl([
      '-u',
      `bob:${bobKey}`,
      '-X',
      'PUT',
      '-D',
      '-',
      `${base}/webhdfs/v1/wh/bob/up.bin?op=CREATE`,
    ]);
    assert.equal(step1.status, 307);
    const created = await curl([
      '-L',
      '-u',
      `bob:${bobKey}`,
      '-T',
      local,
      `${base}/webhdfs/v1/wh/bob/up.bin?op=CREATE&overwrite=false&permission=640&replication=1&blocksize=65536`,
    ]);
    assert.equal(created.status, 201, created.body.toString());
    assert.ok((await readAll(t.fs.cat('/wh/bob/up.bin'))).equals(upload));
    // As a NameNode redirects a write to a DataNode: to a worker's data port, which keeps the first
    // replica of each block (here the only one) on its own disk.
    const workerPorts = new Set(
      (await t.fs.getBlocks('/wh/data.bin')).flatMap((b) => b.locations.map((l) => l.dataPort)),
    );
    const createPort = Number(/^location: http:\/\/[^:/]+:(\d+)\//im.exec(step1.body.toString())![1]);
    assert.ok(workerPorts.has(createPort), `CREATE redirected to a worker's data port (${createPort})`);
    const upBlocks = await t.fs.getBlocks('/wh/bob/up.bin');
    assert.equal(upBlocks.length, 4);
    for (const block of upBlocks) assert.equal(block.locations.length, 1);
    const status = await t.fs.stat('/wh/bob/up.bin');
    assert.deepEqual([status.owner, status.mode, status.replication, status.blockSize], ['bob', 0o640, 1, 65536]);
    const again = await curl(['-u', `bob:${bobKey}`, '-X', 'PUT', `${base}/webhdfs/v1/wh/bob/up.bin?op=CREATE`]);
    assert.equal(again.status, 403);
    assert.equal(JSON.parse(again.body.toString()).RemoteException.exception, 'FileAlreadyExistsException');
  });

  it('the webhdfs npm client lists, reads and writes; a 700 directory refuses another user', async () => {
    const as = (user: string, key: string): WebHdfsClient =>
      webhdfsLib.createClient(
        { user, host: '127.0.0.1', port: new URL(base).port, path: '/webhdfs/v1' },
        { auth: { user, pass: key, sendImmediately: true } },
      );
    const bob = as('bob', bobKey);
    const carol = as('carol', carolKey);
    const names = (await promised<Array<Record<string, unknown>>>((cb) => bob.readdir('/wh', cb))).map(
      (f) => f.pathSuffix,
    );
    assert.deepEqual(
      names,
      (await t.fs.list('/wh')).map((s) => s.path.split('/').pop()),
    );
    assert.ok((await promised<Buffer>((cb) => bob.readFile('/wh/data.bin', cb))).equals(data));
    await promised<void>((cb) => bob.mkdir('/wh/private', '700', cb));
    const secret = Buffer.from('bob only\n');
    await promised<void>((cb) => bob.writeFile('/wh/private/note.txt', secret, {}, cb));
    assert.ok((await readAll(t.fs.cat('/wh/private/note.txt'))).equals(secret));
    assert.equal((await t.fs.stat('/wh/private')).mode, 0o700);
    await assert.rejects(
      promised<void>((cb) => carol.writeFile('/wh/private/intruder.txt', Buffer.from('x'), {}, cb)),
      /[Pp]ermission denied/,
    );
    await assert.rejects(
      promised<Buffer>((cb) => carol.readFile('/wh/private/note.txt', cb)),
      /[Pp]ermission denied/,
    );
    const refused = await curl([
      '-L',
      '-u',
      `carol:${carolKey}`,
      '-X',
      'PUT',
      '-T',
      '/dev/null',
      `${base}/webhdfs/v1/wh/private/x?op=CREATE`,
    ]);
    assert.equal(refused.status, 403);
    assert.equal(JSON.parse(refused.body.toString()).RemoteException.exception, 'AccessControlException');
    await assert.rejects(
      t.fs.stat('/wh/private/intruder.txt'),
      (err: MinimrError) => err.code === 'ENOENT' || err.code === 'EPERM',
    );
  });

  it('MKDIRS, RENAME, DELETE and GETCONTENTSUMMARY, checked through FsClient', async () => {
    const u = ['-u', `bob:${bobKey}`];
    assert.equal((await curl([...u, '-X', 'PUT', `${base}/webhdfs/v1/wh/tree/a/b?op=MKDIRS`])).status, 200);
    await t.fs.put(Buffer.from('hello'), '/wh/tree/a/b/f.txt');
    const summary = await curl([...u, `${base}/webhdfs/v1/wh/tree?op=GETCONTENTSUMMARY`]);
    assert.deepEqual(JSON.parse(summary.body.toString()).ContentSummary, {
      directoryCount: 3,
      fileCount: 1,
      length: 5,
      quota: -1,
      spaceConsumed: 10,
      spaceQuota: -1,
    });
    const renamed = await curl([...u, '-X', 'PUT', `${base}/webhdfs/v1/wh/tree/a?op=RENAME&destination=/wh/tree/c`]);
    assert.deepEqual(JSON.parse(renamed.body.toString()), { boolean: true });
    assert.equal((await t.fs.stat('/wh/tree/c/b/f.txt')).length, 5);
    const notEmpty = await curl([...u, '-X', 'DELETE', `${base}/webhdfs/v1/wh/tree?op=DELETE`]);
    assert.equal(notEmpty.status, 403);
    const deleted = await curl([...u, '-X', 'DELETE', `${base}/webhdfs/v1/wh/tree?op=DELETE&recursive=true`]);
    assert.deepEqual(JSON.parse(deleted.body.toString()), { boolean: true });
    await assert.rejects(t.fs.stat('/wh/tree'), (err: MinimrError) => err.code === 'ENOENT');
    const gone = await curl([...u, '-X', 'DELETE', `${base}/webhdfs/v1/wh/tree?op=DELETE`]);
    assert.deepEqual(JSON.parse(gone.body.toString()), { boolean: false });
  });

  it('a delegation token from GETDELEGATIONTOKEN stands in for credentials until the key is revoked', async () => {
    const daveKey = (await t.cluster.client.addUser('dave')).key;
    const issued = await curl(['-u', `dave:${daveKey}`, `${base}/webhdfs/v1/?op=GETDELEGATIONTOKEN&renewer=x`]);
    assert.equal(issued.status, 200);
    const token = JSON.parse(issued.body.toString()).Token.urlString as string;
    const listed = await curl([`${base}/webhdfs/v1/wh?op=LISTSTATUS&delegation=${token}`]);
    assert.equal(listed.status, 200);
    const read = await curl(['-L', `${base}/webhdfs/v1/wh/data.bin?op=OPEN&offset=7&length=9&delegation=${token}`]);
    assert.ok(read.body.equals(data.subarray(7, 16)));
    const store = createWebHdfsStore(authority, { 'webhdfs.token': token });
    const made = await store.create(`webhdfs://${authority}/wh/dave.txt`);
    await made.write(Buffer.from('by token\n'));
    await made.close();
    assert.equal((await t.fs.stat('/wh/dave.txt')).owner, 'dave');
    const forged = await curl([`${base}/webhdfs/v1/wh?op=LISTSTATUS&delegation=${token.slice(0, -2)}AA`]);
    assert.equal(forged.status, 403);
    const another = await curl([`${base}/webhdfs/v1/?op=GETDELEGATIONTOKEN&delegation=${token}`]);
    assert.equal(another.status, 403);
    await t.cluster.client.revokeUser('dave');
    const revoked = await curl([`${base}/webhdfs/v1/wh?op=LISTSTATUS&delegation=${token}`]);
    assert.equal(revoked.status, 403);
    await assert.rejects(store.stat(`webhdfs://${authority}/wh`), (err: MinimrError) => err.code === 'EAUTH');
  });

  describe('the WebHDFS store against it', () => {
    let store: WebHdfsStore;
    const uri = (path: string) => `webhdfs://${authority}${path}`;
    before(() => {
      store = createWebHdfsStore(authority, { 'webhdfs.user': 'bob', 'webhdfs.password': bobKey });
    });

    it('stats, lists and reads ranges of what FsClient stored', async () => {
      const status = await store.stat(uri('/wh/data.bin'));
      const reference = await t.fs.stat('/wh/data.bin');
      assert.deepEqual([status.type, status.length, status.mtime], ['file', data.length, reference.mtime]);
      const listed = await store.list(uri('/wh'));
      assert.deepEqual(
        listed.map((s) => s.uri),
        (await t.fs.list('/wh')).map((s) => uri(s.path)),
      );
      for (const [start, end] of [
        [0, data.length],
        [1, 65_537],
        [100_000, 100_001],
        [299_000, 400_000],
        [5, 5],
      ] as const) {
        const got = await readAll(store.readRange(uri('/wh/data.bin'), start, end, status.version));
        assert.ok(got.equals(data.subarray(start, end)), `range [${start}, ${end})`);
      }
      assert.ok((await readAll(store.readRange(uri('/wh/data.bin'), 0, Number.POSITIVE_INFINITY))).equals(data));
    });

    it('creates a file visible only once closed; a read pinned to its old version is ECHANGED', async () => {
      const writer = await store.create(uri('/wh/bob/made.txt'));
      await writer.write(Buffer.from('first '));
      await assert.rejects(t.fs.stat('/wh/bob/made.txt'), (err: MinimrError) => err.code === 'ENOENT');
      await writer.write(Buffer.from('version\n'));
      await writer.close();
      assert.equal((await readAll(t.fs.cat('/wh/bob/made.txt'))).toString(), 'first version\n');
      const old = await store.stat(uri('/wh/bob/made.txt'));
      await assert.rejects(store.create(uri('/wh/bob/made.txt')), (err: MinimrError) => err.code === 'EEXIST');
      const replacing = await store.create(uri('/wh/bob/made.txt'), { overwrite: true });
      await replacing.write(Buffer.from('second, longer version\n'));
      await replacing.close();
      await assert.rejects(
        readAll(store.readRange(uri('/wh/bob/made.txt'), 0, 10, old.version)),
        (err: MinimrError) => err.code === 'ECHANGED' && err.message.includes('/wh/bob/made.txt'),
      );
      // Several blocks' worth, in uneven writes: FsClient reads back the same bytes.
      const big = randomBytes(250_000);
      const bigWriter = await store.create(uri('/wh/bob/big.bin'));
      for (let at = 0; at < big.length; at += 33_333) await bigWriter.write(big.subarray(at, at + 33_333));
      await bigWriter.close();
      assert.ok((await readAll(t.fs.cat('/wh/bob/big.bin'))).equals(big));
      await store.remove(uri('/wh/bob/big.bin'));
      // Nothing of the temporary names is left beside it.
      assert.deepEqual(
        (await t.fs.list('/wh/bob')).map((s) => s.path),
        ['/wh/bob/made.txt', '/wh/bob/up.bin'],
      );
    });

    it('commits a job: only the committed attempts, with _SUCCESS, at once; again is a no-op; abort leaves nothing', async () => {
      const committer = store.outputCommitter(uri('/wh/out'), 'job_1_0001');
      await committer.setupJob({ overwrite: false });
      const won = await committer.createPart('attempt_m_0_0', 'part-m-00000');
      const lost = await committer.createPart('attempt_m_0_1', 'part-m-00000');
      await won.write(Buffer.from('a\t1\n'));
      await lost.write(Buffer.from('never seen\n'));
      const other = await committer.createPart('attempt_m_1_0', 'part-m-00001');
      await other.write(Buffer.from('b\t2\n'));
      const parts = [await won.close(), await other.close()];
      await lost.close();
      await assert.rejects(t.fs.stat('/wh/out'), (err: MinimrError) => err.code === 'ENOENT');
      await committer.commitJob(parts);
      await committer.commitJob(parts);
      assert.deepEqual(
        (await t.fs.list('/wh/out')).map((s) => s.path.split('/').pop()),
        ['_SUCCESS', 'part-m-00000', 'part-m-00001'],
      );
      assert.equal((await readAll(t.fs.cat('/wh/out/part-m-00000'))).toString(), 'a\t1\n');
      assert.deepEqual(
        JSON.parse((await readAll(t.fs.cat('/wh/out/_SUCCESS'))).toString()).parts.map((p: { name: string }) => p.name),
        ['part-m-00000', 'part-m-00001'],
      );
      assert.ok(!(await t.fs.list('/wh')).some((s) => s.path.includes('minimr-job')));

      const existing = store.outputCommitter(uri('/wh/out'), 'job_1_0002');
      await assert.rejects(existing.setupJob({ overwrite: false }), (err: MinimrError) => err.code === 'EOUTPUTEXISTS');
      const replacing = store.outputCommitter(uri('/wh/out'), 'job_1_0003');
      await replacing.setupJob({ overwrite: true });
      const part = await replacing.createPart('attempt_r_0_0', 'part-r-00000');
      await part.write(Buffer.from('new\n'));
      await replacing.commitJob([await part.close()]);
      assert.deepEqual(
        (await t.fs.list('/wh/out')).map((s) => s.path.split('/').pop()),
        ['_SUCCESS', 'part-r-00000'],
      );

      const aborted = store.outputCommitter(uri('/wh/out2'), 'job_1_0004');
      await aborted.setupJob({ overwrite: false });
      const dropped = await aborted.createPart('attempt_m_0_0', 'part-m-00000');
      await dropped.write(Buffer.from('x\n'));
      await dropped.close();
      await aborted.abortJob();
      assert.ok(!(await t.fs.list('/wh')).some((s) => s.path.includes('out2')));
    });

    it('wrong credentials are EAUTH naming the store; an unreachable server is ESTORE after retries', async () => {
      const wrong = createWebHdfsStore(authority, { 'webhdfs.user': 'bob', 'webhdfs.password': carolKey });
      await assert.rejects(
        wrong.stat(uri('/wh')),
        (err: MinimrError) => err.code === 'EAUTH' && err.message.includes(`webhdfs://${authority}`),
      );
      const denied = createWebHdfsStore(authority, { 'webhdfs.user': 'carol', 'webhdfs.password': carolKey });
      await assert.rejects(denied.list(uri('/wh/private')), (err: MinimrError) => err.code === 'EPERM');
      const port = await freePort();
      const nowhere = createWebHdfsStore(`127.0.0.1:${port}`, {}, { attempts: 3, backoffMs: 10 });
      const started = Date.now();
      await assert.rejects(
        nowhere.stat(`webhdfs://127.0.0.1:${port}/x`),
        (err: MinimrError) =>
          err.code === 'ESTORE' &&
          err.message.includes(`webhdfs://127.0.0.1:${port}/x`) &&
          /ECONNREFUSED/.test(err.message),
      );
      assert.ok(Date.now() - started >= 30, 'it waited between attempts');
    });
  });
});

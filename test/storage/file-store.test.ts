import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MinimrError } from '../../src/errors.js';
import { createFileStore, normaliseLocation, parseStoreUri } from '../../src/storage/index.js';

async function collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

describe('store URIs', () => {
  it('parses every scheme, and hdfs:// as webhdfs://', () => {
    assert.deepEqual(parseStoreUri('/in/x/'), { scheme: 'minimr', authority: '', path: '/in/x', uri: '/in/x' });
    assert.deepEqual(parseStoreUri('minimr:///in'), { scheme: 'minimr', authority: '', path: '/in', uri: '/in' });
    assert.deepEqual(parseStoreUri('file:///data//in/'), {
      scheme: 'file',
      authority: '',
      path: '/data/in',
      uri: 'file:///data/in',
    });
    assert.deepEqual(parseStoreUri('s3://logs/2026/a%20b'), {
      scheme: 's3',
      authority: 'logs',
      path: '/2026/a b',
      uri: 's3://logs/2026/a b',
    });
    assert.deepEqual(parseStoreUri('hdfs://nn.example:9870/user/x'), {
      scheme: 'webhdfs',
      authority: 'nn.example:9870',
      path: '/user/x',
      uri: 'webhdfs://nn.example:9870/user/x',
    });
  });

  it('normalises block-store URIs to plain paths and leaves other URIs as given', () => {
    assert.equal(normaliseLocation('minimr:///in//x/'), '/in/x');
    assert.equal(normaliseLocation('/in/x'), '/in/x');
    assert.equal(normaliseLocation('s3://b/k'), 's3://b/k');
  });

  it('refuses malformed locations with EBADPATH saying why', () => {
    const refused = (uri: string, why: RegExp) =>
      assert.throws(
        () => parseStoreUri(uri),
        (e: MinimrError) => e.code === 'EBADPATH' && why.test(e.message),
      );
    refused('in/x', /not an absolute path or a URI/);
    refused('gopher://h/x', /unknown scheme gopher/);
    refused('file://host/x', /takes no host/);
    refused('s3://Bad_Bucket/x', /bucket name/);
    refused('webhdfs://nn/x', /host and port/);
    refused('file:///a/../etc', /'\.\.'/);
    refused('file:///a/%zz', /%-escape/);
  });
});

describe('the file:// store', () => {
  const store = createFileStore();
  let dir: string;
  const uri = (p: string) => `file://${join(dir, p)}`;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-file-store-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('lists, stats and reads byte ranges as node:fs sees the files', async () => {
    const bytes = Buffer.from(Array.from({ length: 3_000_000 }, (_, i) => (i * 7) & 0xff));
    await writeFile(join(dir, 'a.bin'), bytes);
    await writeFile(join(dir, '_SUCCESS'), '');
    const listed = await store.list(`file://${dir}`);
    assert.deepEqual(
      listed.map((s) => [s.uri, s.type, s.length]),
      [
        [uri('_SUCCESS'), 'file', 0],
        [uri('a.bin'), 'file', bytes.length],
      ],
    );
    const status = await store.stat(uri('a.bin'));
    assert.ok(
      (await collect(store.readRange(uri('a.bin'), 1_000_001, 2_500_000, status.version))).equals(
        bytes.subarray(1_000_001, 2_500_000),
      ),
    );
    // Past the end: to the end.
    assert.ok((await collect(store.readRange(uri('a.bin'), 2_999_990, 4_000_000))).equals(bytes.subarray(2_999_990)));
    await assert.rejects(store.stat(uri('none')), (e: MinimrError) => e.code === 'ENOENT');
  });

  it('fails a read pinned to a version the file no longer has with ECHANGED', async () => {
    await writeFile(join(dir, 'v.txt'), 'first\n');
    const { version } = await store.stat(uri('v.txt'));
    await writeFile(join(dir, 'v.txt'), 'second\n');
    await utimes(join(dir, 'v.txt'), new Date(), new Date(Date.now() + 5000));
    await assert.rejects(collect(store.readRange(uri('v.txt'), 0, 10, version)), (e: MinimrError) => {
      return e.code === 'ECHANGED' && e.message.includes(uri('v.txt'));
    });
  });

  it('makes a created file visible only when closed; EEXIST without overwrite', async () => {
    const w = await store.create(uri('sub/new.txt'));
    await w.write(Buffer.from('hello '));
    await w.write(Buffer.from('world'));
    await assert.rejects(store.stat(uri('sub/new.txt')), (e: MinimrError) => e.code === 'ENOENT');
    await w.close();
    assert.equal(await readFile(join(dir, 'sub/new.txt'), 'utf8'), 'hello world');
    await assert.rejects(store.create(uri('sub/new.txt')), (e: MinimrError) => e.code === 'EEXIST');
    const aborted = await store.create(uri('sub/aborted.txt'));
    await aborted.write(Buffer.from('x'));
    await aborted.abort();
    assert.deepEqual(await readdir(join(dir, 'sub')), ['new.txt']);
    await assert.rejects(store.remove(uri('sub')), (e: MinimrError) => e.code === 'ENOTEMPTY');
    await store.remove(uri('sub'), { recursive: true });
  });

  it('commits a job output whole, once, and an abort leaves nothing', async () => {
    const out = uri('out');
    const job = store.outputCommitter(out, 'job_1');
    await job.setupJob({ overwrite: false });
    const winner = await job.createPart('attempt_m_0_1', 'part-m-00000');
    await winner.write(Buffer.from('a\t1\n'));
    const loser = await job.createPart('attempt_m_0_0', 'part-m-00000');
    await loser.write(Buffer.from('a\t999\n'));
    const other = await job.createPart('attempt_m_1_0', 'part-m-00001');
    await other.write(Buffer.from('b\t2\n'));
    const parts = [await winner.close(), await other.close()];
    await loser.close();
    await assert.rejects(store.stat(out), (e: MinimrError) => e.code === 'ENOENT');
    await job.commitJob(parts);
    await job.commitJob(parts); // again, as after a restart: nothing changes
    assert.deepEqual((await readdir(join(dir, 'out'))).sort(), ['_SUCCESS', 'part-m-00000', 'part-m-00001']);
    assert.equal(await readFile(join(dir, 'out/part-m-00000'), 'utf8'), 'a\t1\n');
    assert.deepEqual(JSON.parse(await readFile(join(dir, 'out/_SUCCESS'), 'utf8')), {
      parts: [
        { name: 'part-m-00000', bytes: 4 },
        { name: 'part-m-00001', bytes: 4 },
      ],
    });
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.includes('minimr')),
      [],
    );

    const again = store.outputCommitter(out, 'job_2');
    await assert.rejects(again.setupJob({ overwrite: false }), (e: MinimrError) => e.code === 'EOUTPUTEXISTS');
    await again.setupJob({ overwrite: true });
    const part = await again.createPart('attempt_r_0_0', 'part-r-00000');
    await part.write(Buffer.from('c\t3\n'));
    await part.close();
    await again.abortJob();
    assert.deepEqual((await readdir(join(dir, 'out'))).sort(), ['_SUCCESS', 'part-m-00000', 'part-m-00001']);
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.includes('minimr')),
      [],
    );

    const replacing = store.outputCommitter(out, 'job_3');
    await replacing.setupJob({ overwrite: true });
    const p = await replacing.createPart('attempt_r_0_0', 'part-r-00000');
    await p.write(Buffer.from('d\t4\n'));
    await replacing.commitJob([await p.close()]);
    assert.deepEqual((await readdir(join(dir, 'out'))).sort(), ['_SUCCESS', 'part-r-00000']);
    // A killed attempt still writing after the commit makes the staging directory again: cleanupJob drops it.
    const staged = (await readdir(dir)).filter((n) => n.includes('minimr'));
    assert.deepEqual(staged, []);
    await mkdir(join(dir, '.out.minimr-job_3', 'straggler'), { recursive: true });
    await replacing.cleanupJob();
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.includes('minimr')),
      [],
    );
    assert.deepEqual((await readdir(join(dir, 'out'))).sort(), ['_SUCCESS', 'part-r-00000']);
  });

  it('commits only parts staged by an attempt of the job, and stops when the job ended meanwhile', async () => {
    // A part report comes from a task process that also runs the job's code: it may name any path.
    await writeFile(join(dir, 'secret.txt'), 'not the job output\n');
    const job = store.outputCommitter(uri('forged'), 'job_4');
    await job.setupJob({ overwrite: false });
    const real = await job.createPart('attempt_r_0_0', 'part-r-00000');
    await real.write(Buffer.from('x\n'));
    const part = await real.close();
    for (const path of [
      join(dir, 'secret.txt'),
      `${dir}/.forged.minimr-job_4/_temporary/attempt_r_0_0/../../../secret.txt`,
      join(dir, '.forged.minimr-job_4/_temporary/attempt_r_0_0/part-r-00001'),
    ]) {
      await assert.rejects(
        job.commitJob([{ ...part, commit: { path } }]),
        (e: MinimrError) => e.code === 'EBADREQUEST',
        path,
      );
    }
    await assert.rejects(job.commitJob([part], { cancelled: () => true }), (e: MinimrError) => e.code === 'EJOBKILLED');
    await job.abortJob();
    assert.equal(await readFile(join(dir, 'secret.txt'), 'utf8'), 'not the job output\n');
    await assert.rejects(store.stat(uri('forged')), (e: MinimrError) => e.code === 'ENOENT');
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.includes('forged')),
      [],
    );
  });
});

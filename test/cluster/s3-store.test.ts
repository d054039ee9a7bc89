/**
 * The s3:// store against a real S3-protocol server (Ceph's radosgw, started by scripts/s3-server.mjs),
 * cross-checked with an independent client (Debian's boto3): what boto3 put, minimr lists, stats and
 * reads by range byte for byte; what minimr writes and commits, boto3 reads; an aborted job leaves no
 * object and no open upload as boto3 lists them. Credentials reach minimr through the SDK's standard
 * chain (the environment), as they would a user's job.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { createS3Store, type PendingPart, type Store } from '../../src/storage/stores/index.js';
import { seededRandom } from '../../src/util/index.js';
import { boto3, ensureBoto3, startS3Proxy, startS3Server, type TestS3Server } from '../helpers/s3-server.js';

const BUCKET = 'minimr-test';
// The SDK's credential chain ends by asking the EC2 instance metadata service; a test never goes there.
process.env.AWS_EC2_METADATA_DISABLED = 'true';
const MiB = 1024 * 1024;

function randomBytes(seed: number, n: number): Buffer {
  const random = seededRandom(seed);
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(random() * 256);
  return b;
}
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

async function readAll(store: Store, uri: string, start: number, end: number, version?: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of store.readRange(uri, start, end, version)) chunks.push(c);
  return Buffer.concat(chunks);
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  await new Promise<void>((r) => server.close(() => r()));
  return typeof address === 'object' && address ? address.port : 1;
}

function rejectsWith(code: string, pattern?: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof MinimrError, `expected a MinimrError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (pattern) assert.match(err.message, pattern);
    return true;
  };
}

describe('s3:// store against radosgw, cross-checked with boto3', { timeout: 300_000 }, () => {
  let server: TestS3Server | undefined;
  let python: string | undefined;
  let store: Store;
  let dir: string;
  const py = (code: string, args: unknown = {}) => boto3(python!, server!, code, args);

  before(async () => {
    python = ensureBoto3();
    if (!python) return;
    server = await startS3Server();
    process.env.AWS_ACCESS_KEY_ID = server.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = server.secretAccessKey;
    store = createS3Store({ 's3.endpoint': server.endpoint });
    dir = await mkdtemp(join(tmpdir(), 'minimr-s3-test-'));
    py('s3.create_bucket(Bucket=args)', BUCKET);
  });
  after(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('lists, stats and reads by range what boto3 put', async (t) => {
    if (!server) return t.skip('no python3-boto3 (scripts/ensure-boto3.sh failed)');
    const a = randomBytes(1, 300_000);
    const b = randomBytes(2, 1234);
    await writeFile(join(dir, 'a'), a);
    await writeFile(join(dir, 'b'), b);
    const heads = py(
      `for key, path in args['files']:
    s3.upload_file(path, '${BUCKET}', key)
s3.put_object(Bucket='${BUCKET}', Key='in/_SUCCESS', Body=b'')
result = {k: s3.head_object(Bucket='${BUCKET}', Key=k)['ETag'] for k, _ in args['files']}`,
      {
        files: [
          ['in/a.txt', join(dir, 'a')],
          ['in/sub/b.txt', join(dir, 'b')],
        ],
      },
    ) as Record<string, string>;

    const listed = await store.list(`s3://${BUCKET}/in`);
    assert.deepEqual(
      listed.map((s) => [s.uri, s.type, s.length]),
      [
        [`s3://${BUCKET}/in/_SUCCESS`, 'file', 0],
        [`s3://${BUCKET}/in/a.txt`, 'file', a.length],
        [`s3://${BUCKET}/in/sub`, 'dir', 0],
      ],
    );
    assert.equal(listed[1]!.version, heads['in/a.txt']);
    const statA = await store.stat(`s3://${BUCKET}/in/a.txt`);
    assert.equal(statA.length, a.length);
    assert.equal(statA.version, heads['in/a.txt']);
    assert.equal((await store.stat(`s3://${BUCKET}/in/sub`)).type, 'dir');
    assert.equal((await store.stat(`s3://${BUCKET}/`)).type, 'dir');
    assert.deepEqual(
      (await store.list(`s3://${BUCKET}/in/sub/b.txt`)).map((s) => [s.uri, s.length]),
      [[`s3://${BUCKET}/in/sub/b.txt`, b.length]],
    );

    for (const [start, end] of [
      [0, a.length],
      [0, 1],
      [1000, 70_000],
      [299_999, 300_000],
      [250_000, 10_000_000],
      [300_000, 300_010],
      [5, 5],
    ] as const) {
      const got = await readAll(store, `s3://${BUCKET}/in/a.txt`, start, end, statA.version);
      assert.ok(got.equals(a.subarray(start, Math.min(end, a.length))), `range [${start}, ${end})`);
    }
    await assert.rejects(store.stat(`s3://${BUCKET}/in/nope`), rejectsWith('ENOENT', /in\/nope/));
    await assert.rejects(store.list(`s3://${BUCKET}/nope`), rejectsWith('ENOENT'));
    await assert.rejects(store.stat('s3://no-such-bucket-here/x'), rejectsWith('ENOENT'));
    await assert.rejects(readAll(store, `s3://${BUCKET}/in/nope`, 0, 10), rejectsWith('ENOENT'));
  });

  it('lists and reads keys with spaces, plus signs and non-ASCII characters', async (t) => {
    if (!server) return t.skip('no python3-boto3');
    const key = 'odd/a b+c \u00fc%20.txt';
    py(`s3.put_object(Bucket='${BUCKET}', Key=args, Body='caf\u00e9\\n'.encode())`, key);
    const listed = await store.list(`s3://${BUCKET}/odd`);
    assert.deepEqual(
      listed.map((s) => [s.uri, s.length]),
      [[`s3://${BUCKET}/${key}`, 6]],
    );
    const got = await readAll(store, listed[0]!.uri, 0, Number.POSITIVE_INFINITY, listed[0]!.version);
    assert.equal(got.toString(), 'caf\u00e9\n');
  });

  it('fails a read with ECHANGED naming the object when it was overwritten after stat', async (t) => {
    if (!server) return t.skip('no python3-boto3');
    py(`s3.put_object(Bucket='${BUCKET}', Key='chg/x.txt', Body=b'first version of the file')`);
    const uri = `s3://${BUCKET}/chg/x.txt`;
    const before = await store.stat(uri);
    assert.equal((await readAll(store, uri, 0, 5, before.version)).toString(), 'first');
    py(`s3.put_object(Bucket='${BUCKET}', Key='chg/x.txt', Body=b'second version of the file!')`);
    await assert.rejects(readAll(store, uri, 0, 5, before.version), rejectsWith('ECHANGED', /chg\/x\.txt/));
    // Past the end too: the version is still checked.
    await assert.rejects(readAll(store, uri, 100, 200, before.version), rejectsWith('ECHANGED', /chg\/x\.txt/));
  });

  it('writes small files in one PUT and large ones as multipart uploads that boto3 reads back', async (t) => {
    if (!server) return t.skip('no python3-boto3');
    const small = randomBytes(3, 1000);
    const large = randomBytes(4, 19 * MiB + 17);
    for (const [key, data] of [
      ['w/small', small],
      ['w/large', large],
    ] as const) {
      const w = await store.create(`s3://${BUCKET}/${key}`);
      for (let i = 0; i < data.length; i += 3 * MiB + 5) await w.write(data.subarray(i, i + 3 * MiB + 5));
      await w.close();
    }
    const got = py(
      `result = {}
for k in ['w/small', 'w/large']:
    o = s3.get_object(Bucket='${BUCKET}', Key=k)
    result[k] = [hashlib.md5(o['Body'].read()).hexdigest(), o['ETag']]`,
    ) as Record<string, [string, string]>;
    assert.equal(got['w/small']![0], md5(small));
    assert.equal(got['w/large']![0], md5(large));
    assert.match(got['w/large']![1], /-3"$/, 'a multipart upload of 3 parts of 8 MiB');
    await assert.rejects(store.create(`s3://${BUCKET}/w/small`), rejectsWith('EEXIST'));
    const aborted = await store.create(`s3://${BUCKET}/w/aborted`);
    await aborted.write(randomBytes(5, 9 * MiB));
    await aborted.abort();
    const left = py(
      `result = [len(s3.list_objects_v2(Bucket='${BUCKET}', Prefix='w/aborted').get('Contents', [])),
          len(s3.list_multipart_uploads(Bucket='${BUCKET}', Prefix='w/').get('Uploads', []))]`,
    );
    assert.deepEqual(left, [0, 0]);

    await store.mkdir(`s3://${BUCKET}/w/emptydir`);
    assert.deepEqual(await store.list(`s3://${BUCKET}/w/emptydir`), []);
    await assert.rejects(store.remove(`s3://${BUCKET}/w`), rejectsWith('ENOTEMPTY'));
    await store.remove(`s3://${BUCKET}/w`, { recursive: true });
    await assert.rejects(store.stat(`s3://${BUCKET}/w`), rejectsWith('ENOENT'));
  });

  it('commits parts only at job commit, with a _SUCCESS manifest boto3 reads, idempotently', async (t) => {
    if (!server) return t.skip('no python3-boto3');
    const out = `s3://${BUCKET}/out1`;
    const committer = store.outputCommitter(out, 'job_1');
    await committer.setupJob({ overwrite: false });
    const data0 = randomBytes(6, 10 * MiB + 3);
    const data1 = Buffer.from('hello\tworld\n');
    const w0 = await committer.createPart('attempt_m_0_0', 'part-m-00000');
    const loser = await committer.createPart('attempt_m_1_0', 'part-m-00001');
    const w1 = await committer.createPart('attempt_m_1_1', 'part-m-00001');
    const empty = await committer.createPart('attempt_m_2_0', 'part-m-00002');
    await w0.write(data0.subarray(0, 4 * MiB));
    await w0.write(data0.subarray(4 * MiB));
    await loser.write(Buffer.from('a speculative attempt that loses'));
    await w1.write(data1);
    const parts: PendingPart[] = [await w0.close(), await w1.close(), await empty.close()];
    await loser.close();
    assert.deepEqual(
      parts.map((p) => [p.name, p.bytes]),
      [
        ['part-m-00000', data0.length],
        ['part-m-00001', data1.length],
        ['part-m-00002', 0],
      ],
    );
    const listPy = `result = {
  'keys': sorted(o['Key'] for o in s3.list_objects_v2(Bucket='${BUCKET}', Prefix=args + '/').get('Contents', [])),
  'uploads': sorted(u['Key'] for u in s3.list_multipart_uploads(Bucket='${BUCKET}', Prefix=args + '/').get('Uploads', [])),
}`;
    const beforeCommit = py(listPy, 'out1') as { keys: string[]; uploads: string[] };
    assert.deepEqual(
      beforeCommit.keys.filter((k) => !k.startsWith('out1/_minimr-pending/')),
      [],
      'no part is visible before commitJob',
    );
    assert.deepEqual(beforeCommit.uploads, [
      'out1/part-m-00000',
      'out1/part-m-00001',
      'out1/part-m-00001',
      'out1/part-m-00002',
    ]);

    await committer.commitJob(parts);
    const after = py(
      `${listPy}
result['bodies'] = {}
for k in result['keys']:
    o = s3.get_object(Bucket='${BUCKET}', Key=k)
    body = o['Body'].read()
    result['bodies'][k] = [hashlib.md5(body).hexdigest(), len(body), o['ETag']]
result['success'] = json.loads(s3.get_object(Bucket='${BUCKET}', Key='out1/_SUCCESS')['Body'].read())`,
      'out1',
    ) as {
      keys: string[];
      uploads: string[];
      bodies: Record<string, [string, number, string]>;
      success: { parts: { name: string; bytes: number; etag: string }[] };
    };
    assert.deepEqual(after.keys, ['out1/_SUCCESS', 'out1/part-m-00000', 'out1/part-m-00001', 'out1/part-m-00002']);
    assert.deepEqual(after.uploads, [], 'the losing attempt\u2019s upload is aborted too');
    assert.equal(after.bodies['out1/part-m-00000']![0], md5(data0));
    assert.equal(after.bodies['out1/part-m-00001']![0], md5(data1));
    assert.equal(after.bodies['out1/part-m-00002']![1], 0);
    assert.deepEqual(
      after.success.parts,
      ['part-m-00000', 'part-m-00001', 'part-m-00002'].map((name) => ({
        name,
        bytes: after.bodies[`out1/${name}`]![1],
        etag: after.bodies[`out1/${name}`]![2],
      })),
    );

    // Run again, as after a JobTracker restart mid-commit: the completed uploads are recognised.
    await committer.commitJob(parts);
    assert.deepEqual((py(listPy, 'out1') as { keys: string[] }).keys, after.keys);

    await assert.rejects(
      store.outputCommitter(out, 'job_2').setupJob({ overwrite: false }),
      rejectsWith('EOUTPUTEXISTS', /out1/),
    );
    // Overwrite: the old output stays until the new job commits, then only the new parts are there.
    const second = store.outputCommitter(out, 'job_3');
    await second.setupJob({ overwrite: true });
    const w = await second.createPart('attempt_r_0_0', 'part-r-00000');
    await w.write(Buffer.from('new output\n'));
    const newPart = await w.close();
    assert.equal((py(listPy, 'out1') as { keys: string[] }).keys.includes('out1/part-m-00000'), true);
    await second.commitJob([newPart]);
    const replaced = py(
      `${listPy}
result['body'] = s3.get_object(Bucket='${BUCKET}', Key='out1/part-r-00000')['Body'].read().decode()`,
      'out1',
    );
    assert.deepEqual(replaced, { keys: ['out1/_SUCCESS', 'out1/part-r-00000'], uploads: [], body: 'new output\n' });
  });

  it('abortJob leaves no object and no open upload, and touches nothing else', async (t) => {
    if (!server) return t.skip('no python3-boto3');
    py(`s3.put_object(Bucket='${BUCKET}', Key='keep/other-upload-target', Body=b'x')
s3.create_multipart_upload(Bucket='${BUCKET}', Key='out2/someone-elses-upload')`);
    const committer = store.outputCommitter(`s3://${BUCKET}/out2`, 'job_4');
    await committer.setupJob({ overwrite: true });
    const closed = await committer.createPart('attempt_m_0_0', 'part-m-00000');
    await closed.write(randomBytes(7, 9 * MiB));
    await closed.close();
    const writing = await committer.createPart('attempt_m_1_0', 'part-m-00001');
    await writing.write(Buffer.from('killed before close'));
    await committer.abortJob();
    const left = py(`result = {
  'keys': sorted(o['Key'] for o in s3.list_objects_v2(Bucket='${BUCKET}', Prefix='out2/').get('Contents', [])),
  'uploads': sorted(u['Key'] for u in s3.list_multipart_uploads(Bucket='${BUCKET}', Prefix='out2/').get('Uploads', [])),
  'keep': s3.head_object(Bucket='${BUCKET}', Key='keep/other-upload-target')['ContentLength'],
}`);
    assert.deepEqual(left, { keys: [], uploads: ['out2/someone-elses-upload'], keep: 1 });
  });

  it('abortJob after a commit cut short removes what that commit completed', async (t) => {
    if (!server) return t.skip('no python3-boto3');
    const committer = store.outputCommitter(`s3://${BUCKET}/out3`, 'job_5');
    await committer.setupJob({ overwrite: false });
    const parts: PendingPart[] = [];
    for (const n of [0, 1]) {
      const w = await committer.createPart(`attempt_m_${n}_0`, `part-m-0000${n}`);
      await w.write(Buffer.from(`part ${n}\n`));
      parts.push(await w.close());
    }
    // The commit got as far as completing the first upload (done here by boto3) before it was killed.
    const commit = parts[0]!.commit as { key: string; uploadId: string; parts: { n: number; etag: string }[] };
    py(
      `s3.complete_multipart_upload(Bucket='${BUCKET}', Key=args['key'], UploadId=args['uploadId'],
  MultipartUpload={'Parts': [{'PartNumber': p['n'], 'ETag': p['etag']} for p in args['parts']]})`,
      commit,
    );
    assert.equal((await store.stat(`s3://${BUCKET}/out3/part-m-00000`)).length, 7);
    await committer.abortJob();
    const left = py(`result = {
  'keys': [o['Key'] for o in s3.list_objects_v2(Bucket='${BUCKET}', Prefix='out3/').get('Contents', [])],
  'uploads': [u['Key'] for u in s3.list_multipart_uploads(Bucket='${BUCKET}', Prefix='out3/').get('Uploads', [])],
}`);
    assert.deepEqual(left, { keys: [], uploads: [] });
  });

  it("cleanupJob after a commit drops a straggler attempt's upload and record, and keeps the output", async (t) => {
    if (!server) return t.skip('no python3-boto3');
    const committer = store.outputCommitter(`s3://${BUCKET}/out6`, 'job_6');
    await committer.setupJob({ overwrite: false });
    const winner = await committer.createPart('attempt_r_0_0', 'part-r-00000');
    await winner.write(Buffer.from('the committed part\n'));
    const part = await winner.close();
    await committer.commitJob([part]);
    // A speculative loser of the same task, killed, started its upload after the commit read the records.
    const straggler = await committer.createPart('attempt_r_0_1', 'part-r-00000');
    await straggler.write(Buffer.from('a late copy'));
    await committer.cleanupJob();
    await committer.cleanupJob();
    const left = py(`result = {
  'keys': sorted(o['Key'] for o in s3.list_objects_v2(Bucket='${BUCKET}', Prefix='out6/').get('Contents', [])),
  'uploads': [u['Key'] for u in s3.list_multipart_uploads(Bucket='${BUCKET}', Prefix='out6/').get('Uploads', [])],
  'body': s3.get_object(Bucket='${BUCKET}', Key='out6/part-r-00000')['Body'].read().decode(),
}`);
    assert.deepEqual(left, { keys: ['out6/_SUCCESS', 'out6/part-r-00000'], uploads: [], body: 'the committed part\n' });
  });

  it('abortJob aborts an upload whose attempt died before recording it (found by its intent), and no earlier one', async (t) => {
    if (!server) return t.skip('no python3-boto3');
    // Someone else's upload to the same key, started before the job's attempt began its own.
    py(`s3.create_multipart_upload(Bucket='${BUCKET}', Key='out7/part-r-00000')`);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    let uploadStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      uploadStarted = resolve;
    });
    // The attempt's process asks for its upload and never hears back: it is killed waiting.
    const proxy = await startS3Proxy(server, ({ method, url }) => {
      if (method !== 'POST' || !url.startsWith(`/${BUCKET}/out7/part-r-00000?uploads`)) return undefined;
      uploadStarted();
      return new Promise<void>(() => undefined);
    });
    const uploadsPy = `result = sorted((u['Key'], u['UploadId']) for u in s3.list_multipart_uploads(Bucket='${BUCKET}', Prefix='out7/').get('Uploads', []))`;
    const earlier = py(uploadsPy) as [string, string][];
    try {
      const dying = createS3Store({ 's3.endpoint': proxy.endpoint }).outputCommitter(`s3://${BUCKET}/out7`, 'job_7');
      void dying.createPart('attempt_r_0_0', 'part-r-00000').catch(() => undefined);
      await started;
      assert.equal((py(uploadsPy) as [string, string][]).length, 2, 'the dying attempt started its upload');
      await store.outputCommitter(`s3://${BUCKET}/out7`, 'job_7').abortJob();
      const left = py(`result = {
  'keys': sorted(o['Key'] for o in s3.list_objects_v2(Bucket='${BUCKET}', Prefix='out7/').get('Contents', [])),
  'uploads': sorted([u['Key'], u['UploadId']] for u in s3.list_multipart_uploads(Bucket='${BUCKET}', Prefix='out7/').get('Uploads', [])),
}`);
      assert.deepEqual(left, { keys: [], uploads: earlier });
    } finally {
      await proxy.stop();
    }
  });

  it('refuses wrong credentials with EAUTH naming the store', async (t) => {
    if (!server) return t.skip('no python3-boto3');
    const wrong = createS3Store(
      { 's3.endpoint': server.endpoint },
      { credentials: { accessKeyId: server.accessKeyId, secretAccessKey: 'not-the-secret' } },
    );
    await assert.rejects(wrong.list(`s3://${BUCKET}/in`), rejectsWith('EAUTH', /S3 bucket minimr-test at http/));
    const unknown = createS3Store(
      { 's3.endpoint': server.endpoint },
      { credentials: { accessKeyId: 'nobody', secretAccessKey: 'x' } },
    );
    await assert.rejects(unknown.stat(`s3://${BUCKET}/in/a.txt`), rejectsWith('EAUTH', /minimr-test/));
  });

  it('takes credentials from a profile file, and refuses missing ones with EAUTH', async (t) => {
    if (!server) return t.skip('no python3-boto3');
    const saved = { ...process.env };
    try {
      delete process.env.AWS_ACCESS_KEY_ID;
      delete process.env.AWS_SECRET_ACCESS_KEY;
      const credentials = join(dir, 'credentials');
      await writeFile(
        credentials,
        `[minimr-tests]\naws_access_key_id = ${server.accessKeyId}\naws_secret_access_key = ${server.secretAccessKey}\n`,
      );
      await writeFile(join(dir, 'config'), '');
      process.env.AWS_SHARED_CREDENTIALS_FILE = credentials;
      process.env.AWS_CONFIG_FILE = join(dir, 'config');
      process.env.AWS_PROFILE = 'minimr-tests';
      const fromProfile = createS3Store({ 's3.endpoint': server.endpoint });
      assert.equal((await fromProfile.stat(`s3://${BUCKET}/in/a.txt`)).length, 300_000);

      process.env.AWS_PROFILE = 'no-such-profile';
      const without = createS3Store({ 's3.endpoint': server.endpoint });
      await assert.rejects(without.stat(`s3://${BUCKET}/in/a.txt`), rejectsWith('EAUTH', /S3 bucket minimr-test/));
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  });

  it('fails fast with ESTORE naming the URI and the cause when the endpoint does not answer', async () => {
    const port = await closedPort();
    // Explicit credentials: without any, the SDK's chain would go looking on the network.
    const unreachable = createS3Store(
      { 's3.endpoint': `http://127.0.0.1:${port}` },
      { credentials: { accessKeyId: 'k', secretAccessKey: 's' } },
    );
    const started = Date.now();
    await assert.rejects(
      unreachable.stat(`s3://${BUCKET}/x`),
      rejectsWith('ESTORE', /s3:\/\/minimr-test\/x.*ECONNREFUSED/),
    );
    assert.ok(Date.now() - started < 5000, `gave up after ${Date.now() - started} ms`);
  });
});

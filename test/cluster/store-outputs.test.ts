import assert from 'node:assert/strict';
import { chmod, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { copyBetweenStores } from '../../src/cli/commands/fs-uris.js';
import type { MinimrError } from '../../src/errors.js';
import {
  appModule,
  fixtureModule,
  isCode,
  makeText,
  parseCounts,
  readAll,
  readOutput,
  referenceWordCount,
  sharedTempDir,
  startTestCluster,
  teraSortReference,
  type TestCluster,
} from '../helpers/cluster.js';
import {
  boto3,
  bucketAsBoto3Sees,
  ensureBoto3,
  startS3Proxy,
  startS3ServerForCluster,
  type TestS3Server,
} from '../helpers/s3-server.js';

/**
 * Jobs writing their output where it lives (issue 37): to an S3-protocol server (Ceph's radosgw), to a
 * directory every worker shares (file://), and through WebHDFS to minimr's own WebHDFS server, on a
 * real 3-worker cluster. Each output is compared with the same job's block-store output and with a
 * result computed here without minimr; what a job wrote to S3 is read with boto3, a client
 * independent of minimr's, which also lists the bucket's unfinished multipart uploads.
 */
describe('jobs write s3://, file:// and webhdfs:// outputs', () => {
  let t: TestCluster;
  let server: TestS3Server | undefined;
  let python: string | undefined;
  let local: string;
  const texts = [makeText(400_000, 21), makeText(200_001, 22)];
  const conf = () => ({ 's3.endpoint': server!.endpoint });
  const rows = 5000;

  before(async () => {
    python = ensureBoto3();
    server = await startS3ServerForCluster();
    t = await startTestCluster();
    for (const [i, text] of texts.entries()) await t.fs.put(Buffer.from(text), `/in/part-${i}.txt`);
    local = await sharedTempDir('minimr-store-outputs-');
    // The block-store runs every other store's output is compared with.
    const client = t.cluster.client;
    const wc = await client.run(appModule('wordcount'), { input: ['/in'], output: '/out/wc', reducers: 3 });
    assert.equal(wc.state, 'succeeded');
    const gen = await client.run(appModule('teragen'), { output: '/tera/in', params: { rows, maps: 3 } });
    assert.equal(gen.state, 'succeeded');
    const sort = await client.run(appModule('terasort'), { input: ['/tera/in'], output: '/tera/out', reducers: 2 });
    assert.equal(sort.state, 'succeeded');
  });
  after(async () => {
    await t?.stop();
    await server?.stop();
    if (local) await rm(local, { recursive: true, force: true });
  });

  /** The part files of an S3 output as boto3 read them, concatenated in part order. */
  function partsOf(objects: Map<string, Buffer>, prefix: string): Buffer {
    const names = [...objects.keys()].filter((k) => /\/part-[mr]-\d{5}$/.test(k) && k.startsWith(prefix)).sort();
    return Buffer.concat(names.map((k) => objects.get(k)!));
  }

  it('WordCount and TeraSort from s3:// to s3://: outputs equal the block-store runs; boto3 reads them', async (t2) => {
    if (!python) return t2.skip('Debian python3-boto3 could not be installed');
    const s = server!;
    boto3(python, s, "s3.create_bucket(Bucket='jobs')");
    boto3(
      python,
      s,
      "for i, text in enumerate(args['texts']):\n  s3.put_object(Bucket='jobs', Key=f'in/part-{i}.txt', Body=text.encode())",
      { texts },
    );
    const client = t.cluster.client;
    const wc = await client.run(appModule('wordcount'), {
      input: ['s3://jobs/in'],
      output: 's3://jobs/out/wc',
      reducers: 3,
      conf: conf(),
    });
    assert.equal(wc.state, 'succeeded', wc.error?.message);
    const seen = bucketAsBoto3Sees(python, server!, 'jobs', 'out/wc/');
    assert.ok(partsOf(seen.objects, 'out/wc/').equals(await readOutput(t.fs, '/out/wc')));
    assert.deepEqual(
      parseCounts(partsOf(seen.objects, 'out/wc/').toString('utf8')),
      referenceWordCount(texts.join('')),
    );
    // _SUCCESS lists exactly the parts, with their sizes; nothing else was left behind, no upload open.
    const manifest = JSON.parse(seen.objects.get('out/wc/_SUCCESS')!.toString()) as {
      parts: { name: string; bytes: number }[];
    };
    assert.deepEqual(
      manifest.parts.map((p) => [p.name, p.bytes]),
      ['part-r-00000', 'part-r-00001', 'part-r-00002'].map((n) => [n, seen.objects.get(`out/wc/${n}`)!.length]),
    );
    assert.deepEqual([...seen.objects.keys()].sort(), [
      'out/wc/_SUCCESS',
      ...manifest.parts.map((p) => `out/wc/${p.name}`),
    ]);
    assert.deepEqual(seen.uploads, []);

    // TeraSort: records in, records out, in total order across the parts.
    const records = await readOutput(t.fs, '/tera/in');
    boto3(python, s, "s3.put_object(Bucket='jobs', Key='tera/in.dat', Body=bytes.fromhex(args['hex']))", {
      hex: records.toString('hex'),
    });
    const sorted = await client.run(appModule('terasort'), {
      input: ['s3://jobs/tera/in.dat'],
      output: 's3://jobs/tera/out',
      reducers: 2,
      conf: conf(),
    });
    assert.equal(sorted.state, 'succeeded', sorted.error?.message);
    const tera = bucketAsBoto3Sees(python, server!, 'jobs', 'tera/out/');
    const fromS3 = partsOf(tera.objects, 'tera/out/');
    assert.ok(fromS3.equals(await readOutput(t.fs, '/tera/out')));
    assert.ok(fromS3.equals(teraSortReference(records)));
    assert.deepEqual(tera.uploads, []);
  });

  it('an s3:// output that exists is EOUTPUTEXISTS at submission, and a failed job leaves nothing', async (t2) => {
    if (!python) return t2.skip('Debian python3-boto3 could not be installed');
    boto3(
      python,
      server!,
      "s3.create_bucket(Bucket='failing')\ns3.put_object(Bucket='failing', Key='old/x', Body=b'1')",
    );
    const client = t.cluster.client;
    await assert.rejects(
      client.submit(appModule('wordcount'), { input: ['/in'], output: 's3://failing/old', conf: conf() }),
      (e: MinimrError) => e.code === 'EOUTPUTEXISTS' && e.message.includes('s3://failing/old'),
    );
    const id = await client.submit(fixtureModule('failing-reduce'), {
      input: ['/in'],
      output: 's3://failing/out',
      reducers: 3,
      maxAttempts: 1,
      conf: conf(),
    });
    await assert.rejects(client.waitForCompletion(id), isCode('EJOBFAILED', /reduce gave up on purpose/));
    const left = bucketAsBoto3Sees(python, server!, 'failing', 'out/');
    assert.deepEqual([...left.objects.keys()], []);
    assert.deepEqual(left.uploads, []);
  });

  it('a reduce killed between starting its S3 upload and recording it leaves no upload when its job fails', async (t2) => {
    if (!python) return t2.skip('Debian python3-boto3 could not be installed');
    boto3(python, server!, "s3.create_bucket(Bucket='stalled')");
    // Through a proxy: the store starts reduce 2's upload, but its task process never hears so; the
    // other reduces' uploads are answered only once it has started, and their reduces then fail the
    // job, whose end kills reduce 2 while it waits: its upload exists, and no record names it.
    let uploadStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      uploadStarted = resolve;
    });
    let stalled = false;
    const proxy = await startS3Proxy(server!, ({ method, url }) => {
      if (method !== 'POST' || !/^\/stalled\/out\/part-r-\d+\?uploads/.test(url)) return undefined;
      if (!url.startsWith('/stalled/out/part-r-00002?')) return started;
      stalled = true;
      uploadStarted();
      return new Promise<void>(() => undefined);
    });
    try {
      const client = t.cluster.client;
      const id = await client.submit(fixtureModule('failing-reduce'), {
        input: ['/in'],
        output: 's3://stalled/out',
        reducers: 3,
        maxAttempts: 1,
        conf: { 's3.endpoint': proxy.endpoint },
      });
      await assert.rejects(client.waitForCompletion(id), isCode('EJOBFAILED', /reduce gave up on purpose/));
      assert.ok(stalled, "reduce 2's upload was started");
      const left = bucketAsBoto3Sees(python, server!, 'stalled', 'out/');
      assert.deepEqual([...left.objects.keys()], []);
      assert.deepEqual(left.uploads, []);
    } finally {
      await proxy.stop();
    }
  });

  it('a job killed while it commits to S3 leaves no output and no open upload', async (t2) => {
    if (!python) return t2.skip('Debian python3-boto3 could not be installed');
    boto3(python, server!, "s3.create_bucket(Bucket='killed')");
    const client = t.cluster.client;
    // Many parts, so that the commit (one CompleteMultipartUpload per part) lasts long enough to be caught.
    let killedInCommit = false;
    for (let round = 0; round < 4 && !killedInCommit; round++) {
      const output = `s3://killed/out-${round}`;
      const id = await client.submit(appModule('wordcount'), {
        input: ['/in/part-1.txt'],
        output,
        reducers: 40 + 20 * round,
        conf: conf(),
      });
      // Every reduce done while the job still runs: it is committing.
      let status = await client.status(id);
      while (status.state === 'running' && status.reducesCompleted < status.reducesTotal) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        status = await client.status(id);
      }
      if (status.state !== 'running') continue;
      await client.kill(id).catch(() => undefined);
      const ended = await client.waitForCompletion(id).then(
        (s) => s.state,
        (e: MinimrError) => (e.code === 'EJOBKILLED' ? 'killed' : e.code),
      );
      if (ended !== 'killed') continue;
      killedInCommit = true;
      const left = bucketAsBoto3Sees(python, server!, 'killed', `out-${round}/`);
      assert.deepEqual([...left.objects.keys()], [], `${output}: objects left`);
      assert.deepEqual(left.uploads, [], `${output}: uploads left open`);
    }
    assert.ok(killedInCommit, 'no round was caught in its commit');
  });

  it('WordCount to file:// equals the block-store run; outside --file-output-root it is EPERM', async () => {
    await mkdir(join(local, 'out'), { recursive: true });
    await chmod(join(local, 'out'), 0o755);
    const output = `file://${join(local, 'out', 'wc')}`;
    const status = await t.cluster.client.run(appModule('wordcount'), { input: ['/in'], output, reducers: 3 });
    assert.equal(status.state, 'succeeded', status.error?.message);
    const names = (await readdir(join(local, 'out', 'wc'))).sort();
    assert.deepEqual(names, ['_SUCCESS', 'part-r-00000', 'part-r-00001', 'part-r-00002']);
    const parts = await Promise.all(names.slice(1).map((n) => readFile(join(local, 'out', 'wc', n))));
    assert.ok(Buffer.concat(parts).equals(await readOutput(t.fs, '/out/wc')));
    // No staging directory is left beside it.
    assert.deepEqual(await readdir(join(local, 'out')), ['wc']);
  });

  it("WordCount and TeraSort from the block store to webhdfs:// (minimr's own server) equal the block-store runs", async () => {
    const base = t.cluster.url.replace(/^ws/, 'http');
    const authority = new URL(base).host;
    await t.fs.put(Buffer.from('x'), '/owner-probe');
    const admin = (await t.fs.stat('/owner-probe')).owner;
    const basic = Buffer.from(`${admin}:${t.cluster.jobTracker.webPassword}`).toString('base64');
    const issued = await fetch(`${base}/webhdfs/v1/?op=GETDELEGATIONTOKEN`, {
      headers: { authorization: `Basic ${basic}` },
    });
    assert.equal(issued.status, 200);
    const token = ((await issued.json()) as { Token: { urlString: string } }).Token.urlString;
    const client = t.cluster.client;
    const wc = await client.run(appModule('wordcount'), {
      input: ['/in'],
      output: `webhdfs://${authority}/wh-out/wc`,
      reducers: 3,
      conf: { 'webhdfs.token': token },
    });
    assert.equal(wc.state, 'succeeded', wc.error?.message);
    const blocks = await readOutput(t.fs, '/out/wc');
    assert.ok((await readOutput(t.fs, '/wh-out/wc')).equals(blocks));
    assert.deepEqual(
      (await t.fs.list('/wh-out')).map((f) => f.path),
      ['/wh-out/wc'],
    );
    const sorted = await client.run(appModule('terasort'), {
      input: ['/tera/in'],
      output: `hdfs://${authority}/wh-out/tera`,
      reducers: 2,
      conf: { 'webhdfs.token': token },
    });
    assert.equal(sorted.state, 'succeeded', sorted.error?.message);
    assert.ok((await readOutput(t.fs, '/wh-out/tera')).equals(await readOutput(t.fs, '/tera/out')));
  });
});

describe('fs cp of a large tree as a map-only job (DistCp)', () => {
  let t: TestCluster;
  let server: TestS3Server | undefined;
  let python: string | undefined;
  const files = new Map<string, Buffer>();

  before(async () => {
    python = ensureBoto3();
    server = await startS3ServerForCluster();
    t = await startTestCluster({ workers: 2 });
    for (let i = 0; i < 20; i++)
      files.set(`a/${String(i).padStart(2, '0')}.bin`, randomBytes(1 + ((i * 7919) % 90_000)));
    files.set('b/c/deep.txt', Buffer.from('deep\n'));
    files.set('b/empty.txt', Buffer.alloc(0));
    for (const [name, data] of files) await t.fs.put(data, `/tree/${name}`);
  });
  after(async () => {
    await t?.stop();
    await server?.stop();
  });

  it('copies the block store to s3:// and back with a job of 4 maps; every byte arrives', async (t2) => {
    if (!python) return t2.skip('Debian python3-boto3 could not be installed');
    boto3(python, server!, "s3.create_bucket(Bucket='trees')");
    const conf = { 's3.endpoint': server!.endpoint };
    const client = async () => t.cluster.client;
    const up = await copyBetweenStores('/tree', 's3://trees/copy', { overwrite: false, conf, client, maps: 4 });
    assert.equal(up.files, files.size);
    assert.equal(up.job?.maps, 4);
    const status = await t.cluster.client.status(up.job!.id);
    assert.equal(status.state, 'succeeded');
    assert.equal(status.mapsTotal, 4);
    const seen = bucketAsBoto3Sees(python, server!, 'trees', 'copy/');
    // Keys ending in / are the directories' markers (the S3 store's mkdir, as S3A's).
    assert.deepEqual(
      [...seen.objects.keys()].filter((k) => !k.endsWith('/')).sort(),
      [...files.keys()].map((n) => `copy/${n}`).sort(),
    );
    for (const [name, data] of files) assert.ok(seen.objects.get(`copy/${name}`)!.equals(data), name);
    assert.deepEqual(seen.uploads, []);
    // The job's log directory is gone.
    assert.deepEqual(
      (await t.fs.list('/')).map((f) => f.path).filter((p) => p.includes('distcp')),
      [],
    );

    const down = await copyBetweenStores('s3://trees/copy', '/back', { overwrite: false, conf, client });
    assert.ok(down.job, 'a tree of 22 files into the block store is copied by a job');
    for (const [name, data] of files) assert.ok((await readAll(t.fs.cat(`/back/${name}`))).equals(data), name);
    await assert.rejects(
      copyBetweenStores('/tree', 'file:///tmp/never', { overwrite: false, conf, client, mode: 'distributed' }),
      (e: MinimrError) => e.code === 'EUSAGE' && e.message.includes('file:///tmp/never'),
    );
  });
});

describe('file:// outputs on a cluster that opens only some directories to writes', () => {
  let t: TestCluster;
  let open: string;
  let closed: string;

  before(async () => {
    open = await sharedTempDir('minimr-write-open-');
    closed = await sharedTempDir('minimr-write-closed-');
    t = await startTestCluster({ workers: 1, fileOutputRoots: [open] });
    await t.fs.put(Buffer.from('a b a\n'), '/in/a.txt');
  });
  after(async () => {
    await t?.stop();
    for (const d of [open, closed]) if (d) await rm(d, { recursive: true, force: true });
  });

  it('writes under --file-output-root and refuses the rest with EPERM', async () => {
    const client = t.cluster.client;
    const ok = await client.run(appModule('wordcount'), { input: ['/in'], output: `file://${open}/wc` });
    assert.equal(ok.state, 'succeeded', ok.error?.message);
    assert.equal((await readFile(join(open, 'wc', 'part-r-00000'))).toString(), 'a\t2\nb\t1\n');
    await assert.rejects(
      client.submit(appModule('wordcount'), { input: ['/in'], output: `file://${closed}/wc` }),
      (e: MinimrError) => e.code === 'EPERM' && e.message.includes(open) && e.message.includes(closed),
    );
    assert.deepEqual(await readdir(closed), []);
  });
});

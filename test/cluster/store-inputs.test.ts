import assert from 'node:assert/strict';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MinimrError } from '../../src/errors.js';
import {
  appModule,
  makeText,
  parseCounts,
  readOutput,
  referenceWordCount,
  sharedTempDir,
  startTestCluster,
  teraSortReference,
  type TestCluster,
} from '../helpers/cluster.js';
import { boto3, ensureBoto3, startS3ServerForCluster, type TestS3Server } from '../helpers/s3-server.js';

/**
 * Jobs reading their input where it lives (issue 37): a directory every worker reads (file://) and an
 * S3-protocol server (Ceph's radosgw, s3://), on a real 3-worker cluster with 64 KiB blocks, so each
 * input file is cut into many splits and Hadoop's LineRecordReader rule at the split edges matters.
 * Outputs are checked against the same job reading the same bytes from the block store and against
 * a count made here without minimr; the S3 objects are written by boto3, a client independent of
 * minimr's.
 */
describe('jobs read file:// and s3:// inputs', () => {
  let t: TestCluster;
  let local: string;
  let server: TestS3Server | undefined;
  let python: string | undefined;
  const texts = [makeText(700_000, 11), makeText(300_001, 12)];

  before(async () => {
    // The workers' task processes find S3's credentials by the SDK's standard chain: the environment.
    python = ensureBoto3();
    server = await startS3ServerForCluster();
    t = await startTestCluster();
    local = await sharedTempDir('minimr-store-inputs-');
    await mkdir(join(local, 'in'));
    for (const [i, text] of texts.entries()) {
      await writeFile(join(local, 'in', `part-${i}.txt`), text);
      await t.fs.put(Buffer.from(text), `/in/part-${i}.txt`);
    }
    // Not input, as in Hadoop's FileInputFormat.
    await writeFile(join(local, 'in', '_SUCCESS'), 'not input words\n');
    await writeFile(join(local, 'in', '.hidden'), 'not input words either\n');
  });
  after(async () => {
    await t?.stop();
    await server?.stop();
    if (local) await rm(local, { recursive: true, force: true });
  });

  const wantCounts = () => referenceWordCount(texts.join(''));

  let lastJobId = '';
  async function wordCount(input: string, output: string, conf = {}): Promise<Map<string, number>> {
    const status = await t.cluster.client.run(appModule('wordcount'), { input: [input], output, reducers: 2, conf });
    assert.equal(status.state, 'succeeded', status.error?.message);
    assert.ok(status.mapsTotal > 10, `${input}: ${status.mapsTotal} maps`);
    // A warm task process takes a map of another file only when it may read it (worker.ts localStorePaths).
    assert.equal(status.failedAttempts, 0, `${input}: failed attempts`);
    lastJobId = status.jobId;
    return parseCounts((await readOutput(t.fs, output)).toString('utf8'));
  }

  it('WordCount of a file:// directory equals the block-store run and a plain count', async () => {
    const fromBlocks = await wordCount('/in', '/out/wc-blocks');
    const fromFiles = await wordCount(`file://${join(local, 'in')}`, '/out/wc-file');
    assert.deepEqual(fromFiles, fromBlocks);
    // The files are on a local file system of the host every worker of this cluster runs on: node-local maps.
    const maps = (await t.cluster.client.attempts(lastJobId)).filter((a) => a.kind === 'map');
    assert.deepEqual(new Set(maps.map((a) => a.locality)), new Set(['node']));
    assert.deepEqual(fromFiles, wantCounts());
  });

  it('TeraSort of file:// records equals the block-store run', async () => {
    const rows = 6000;
    await t.cluster.client.run(appModule('teragen'), { output: '/tera/in', params: { rows, maps: 3 } });
    const records = await readOutput(t.fs, '/tera/in');
    assert.equal(records.length, rows * 100);
    await writeFile(join(local, 'tera.dat'), records);
    const sort = async (input: string, output: string) => {
      const status = await t.cluster.client.run(appModule('terasort'), { input: [input], output, reducers: 2 });
      assert.equal(status.state, 'succeeded', status.error?.message);
      return readOutput(t.fs, output);
    };
    const fromBlocks = await sort('/tera/in', '/tera/out-blocks');
    const fromFile = await sort(`file://${join(local, 'tera.dat')}`, '/tera/out-file');
    assert.ok(fromFile.equals(fromBlocks));
    assert.ok(fromFile.equals(teraSortReference(records)));
  });

  it('WordCount of s3:// objects written by boto3 equals the block-store run', async (t2) => {
    if (!python) return t2.skip('Debian python3-boto3 could not be installed');
    const s = server!;
    boto3(python, s, "s3.create_bucket(Bucket='words')");
    boto3(
      python,
      s,
      "for i, text in enumerate(args['texts']):\n  s3.put_object(Bucket='words', Key=f'in/part-{i}.txt', Body=text.encode())",
      { texts },
    );
    const conf = { 's3.endpoint': s.endpoint };
    const fromS3 = await wordCount('s3://words/in', '/out/wc-s3', conf);
    assert.deepEqual(fromS3, wantCounts());
  });

  it('refuses malformed and missing inputs with one clear line', async () => {
    const submit = (input: string) =>
      t.cluster.client.submit(appModule('wordcount'), { input: [input], output: '/out/never' });
    await assert.rejects(
      submit('ftp://host/x'),
      (e: MinimrError) => e.code === 'EBADPATH' && /unknown scheme ftp/.test(e.message),
    );
    await assert.rejects(submit('s3://A_B/x'), (e: MinimrError) => e.code === 'EBADPATH' && /bucket/.test(e.message));
    await assert.rejects(
      submit(`file://${join(local, 'nothing-here')}`),
      (e: MinimrError) => e.code === 'ENOINPUT' && e.message.includes('nothing-here'),
    );
  });
});

describe('file:// inputs on a cluster that opens only some directories', () => {
  let t: TestCluster;
  let open: string;
  let closed: string;

  before(async () => {
    open = await sharedTempDir('minimr-open-');
    closed = await sharedTempDir('minimr-closed-');
    await writeFile(join(open, 'a.txt'), 'x y x\n');
    await writeFile(join(closed, 'a.txt'), 'secret words\n');
    t = await startTestCluster({ workers: 1, fileRoots: [open] });
  });
  after(async () => {
    await t?.stop();
    for (const d of [open, closed]) if (d) await rm(d, { recursive: true, force: true });
  });

  it('reads under --file-root and refuses the rest with EPERM', async () => {
    const status = await t.cluster.client.run(appModule('wordcount'), {
      input: [`file://${open}`],
      output: '/out/open',
    });
    assert.equal(status.state, 'succeeded');
    assert.deepEqual(
      parseCounts((await readOutput(t.fs, '/out/open')).toString('utf8')),
      new Map([
        ['x', 2],
        ['y', 1],
      ]),
    );
    await assert.rejects(
      t.cluster.client.submit(appModule('wordcount'), { input: [`file://${closed}`], output: '/out/closed' }),
      (e: MinimrError) => e.code === 'EPERM' && e.message.includes(open) && e.message.includes(closed),
    );
    // A symbolic link under the open directory does not lead outside it.
    await symlink(join(closed, 'a.txt'), join(open, 'link.txt'));
    await assert.rejects(
      t.cluster.client.submit(appModule('wordcount'), { input: [`file://${open}`], output: '/out/linked' }),
      (e: MinimrError) => e.code === 'EPERM' && e.message.includes('link.txt'),
    );
  });
});

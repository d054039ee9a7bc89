/**
 * WordCount of the same corpus read from three stores on the embedded 2-worker cluster (issue 37):
 * minimr's block store, a local directory (`file://`) and an S3-protocol server (`s3://`, Ceph's
 * radosgw from Debian on an in-memory one-node cluster, started by scripts/s3-server.mjs on this
 * machine: its figures are of S3's protocol and of radosgw, not of AWS). The block store is the
 * reference: the other stores' runs are paired with its runs (run k of each, the order rotating from
 * repeat to repeat so the machine's drift spreads over all three), and their ratios reported as
 * median, mean and standard error of the pairs.
 *
 * Every output is checked: each store's run must write the block-store run's counts, and those must
 * be the generator's (what it wrote of each word).
 *
 * Run: npm run bench:stores [-- --size-mb 1024 --repeats 3]
 * Writes bench-results/stores.json and stores.md at the package root.
 */
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import yargs from 'yargs';
import { createReadStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { LocalCluster } from '../src/local/index.js';
import type { JobClient } from '../src/runtime/index.js';
import { createS3Store } from '../src/storage/stores/index.js';
import { startS3Server, type TestS3Server } from '../test/helpers/s3-server.js';
import {
  BENCH_CLUSTER,
  finishMachineRecord,
  machineLine,
  machineRecord,
  startBenchCluster,
} from './lib/bench-cluster.js';
import { writeCorpus } from './lib/corpus.js';
import { followJob, readOutputText } from './lib/follow-job.js';
import { describeRatios, pairedRatios, ratioSummaryJson } from './lib/paired.js';
import { median, progressLog, r3 } from './lib/shell.js';

const MB = 1024 * 1024;
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORDCOUNT = fileURLToPath(new URL('../apps/wordcount.js', import.meta.url));

const args = yargs(process.argv.slice(2))
  .option('size-mb', { type: 'number', default: 1024, describe: 'corpus size, MiB' })
  .option('repeats', { type: 'number', default: 3, describe: 'runs of each store, interleaved' })
  .strict()
  .parseSync();

interface StoreRun {
  store: 'block store' | 'file://' | 's3://';
  input: string;
  conf: Record<string, string>;
  seconds: number[];
  maps?: number;
  verified?: boolean;
}

async function main(): Promise<void> {
  const log = progressLog();
  const machine = machineRecord();
  const work = await mkdtemp(join(os.tmpdir(), 'minimr-bench-stores-'));
  // Task processes read file:// inputs as the workers' task account.
  await chmod(work, 0o755);
  let cluster: LocalCluster | undefined;
  let server: TestS3Server | undefined;
  try {
    const corpusPath = join(work, 'in', 'corpus.txt');
    await mkdir(dirname(corpusPath), { recursive: true });
    await chmod(dirname(corpusPath), 0o755);
    const corpus = await writeCorpus(corpusPath, args['size-mb'] * MB, { grep: false });
    log(`corpus: ${(corpus.bytes / MB).toFixed(0)} MB, ${corpus.words} words`);

    server = await startS3Server();
    process.env.AWS_ACCESS_KEY_ID = server.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = server.secretAccessKey;
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
    log(`S3 server (radosgw) at ${server.endpoint}`);
    const s3conf = { 's3.endpoint': server.endpoint };
    const s3 = createS3Store(s3conf);
    // Buckets are made by the store's owner, not by minimr (as with Hadoop's S3A).
    await new S3Client({
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
      credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
    }).send(new CreateBucketCommand({ Bucket: 'bench' }));
    let t = performance.now();
    const writer = await s3.create('s3://bench/in/corpus.txt', { overwrite: true });
    for await (const chunk of createReadStream(corpusPath, { highWaterMark: 8 * MB }))
      await writer.write(chunk as Buffer);
    await writer.close();
    log(`put s3://bench/in/corpus.txt in ${((performance.now() - t) / 1000).toFixed(1)} s`);

    // Started after the credentials are set: the workers' task processes find them in their environment.
    cluster = await startBenchCluster(join(work, 'cluster'));
    const client = cluster.client;
    t = performance.now();
    await client.fs.put(corpusPath, '/bench/in/corpus.txt', { overwrite: true });
    log(`put /bench/in/corpus.txt in ${((performance.now() - t) / 1000).toFixed(1)} s`);

    const runs: StoreRun[] = [
      { store: 'block store', input: '/bench/in', conf: {}, seconds: [] },
      { store: 'file://', input: `file://${dirname(corpusPath)}`, conf: {}, seconds: [] },
      { store: 's3://', input: 's3://bench/in', conf: s3conf, seconds: [] },
    ];
    const want = new Map(corpus.vocabulary.map((w, i) => [w, corpus.counts[i]!]));
    let reference: string | undefined;
    for (let k = 0; k < args.repeats; k++) {
      // Rotated order: run k starts with store k mod 3.
      for (let j = 0; j < runs.length; j++) {
        const run = runs[(k + j) % runs.length]!;
        const label = `${run.store} run ${k + 1}`;
        const t0 = performance.now();
        const jobId = await client.submit(WORDCOUNT, {
          input: [run.input],
          output: `/bench/out/${run.store.replace(/[^a-z]/g, '')}`,
          reducers: 2,
          overwrite: true,
          conf: run.conf,
        });
        const { status, seconds } = await followJob(client, jobId, label, t0, log);
        run.seconds.push(seconds);
        run.maps = status.mapsTotal;
        if (k === 0) run.verified = await verify(client, `/bench/out/${run.store.replace(/[^a-z]/g, '')}`);
      }
    }

    async function verify(c: JobClient, dir: string): Promise<boolean> {
      const text = await readOutputText(c, dir);
      const got = new Map<string, number>();
      for (const line of text.split('\n')) {
        if (line === '') continue;
        const tab = line.lastIndexOf('\t');
        got.set(line.slice(0, tab), Number(line.slice(tab + 1)));
      }
      const sorted = [...got].sort((a, b) => (a[0] < b[0] ? -1 : 1)).join('\n');
      reference ??= sorted;
      const generatorAgrees =
        got.size === [...want.values()].filter((n) => n > 0).length &&
        [...want].every(([w, n]) => n === 0 || got.get(w) === n);
      return sorted === reference && generatorAgrees;
    }

    finishMachineRecord(machine);
    const base = runs[0]!;
    const rows = runs.map((run) => {
      const ratio = run === base ? undefined : pairedRatios(run.seconds, base.seconds);
      return {
        store: run.store,
        input: run.input,
        maps: run.maps,
        seconds: run.seconds.map(r3),
        medianSeconds: r3(median(run.seconds)),
        mbPerSecond: r3(corpus.bytes / MB / median(run.seconds)),
        verified: run.verified === true,
        ratio,
      };
    });
    const md = [
      `# WordCount of ${(corpus.bytes / MB).toFixed(0)} MB from three stores`,
      '',
      `\`node dist/benchmarks/stores.js --size-mb ${args['size-mb']} --repeats ${args.repeats}\`; ` +
        `cluster: ${BENCH_CLUSTER.workers} workers, ${BENCH_CLUSTER.mapSlots} map + ${BENCH_CLUSTER.reduceSlots} ` +
        'reduce slot each, 2 reducers; s3:// is Ceph radosgw 16.2 (Debian) on this machine, in memory.',
      '',
      '| store | maps | median s | MB/s | / block store (paired) | output checked |',
      '|---|---:|---:|---:|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.store} | ${r.maps} | ${r.medianSeconds.toFixed(2)} | ${r.mbPerSecond.toFixed(1)} | ` +
          `${r.ratio ? describeRatios(r.ratio) : '1'} | ${r.verified ? 'yes' : 'NO'} |`,
      ),
      '',
      machineLine(machine),
      '',
    ].join('\n');
    const json = {
      sizeMb: args['size-mb'],
      repeats: args.repeats,
      corpusBytes: corpus.bytes,
      machine,
      rows: rows.map(({ ratio, ...r }) => ({ ...r, ...ratioSummaryJson(ratio) })),
    };
    await mkdir(join(ROOT, 'bench-results'), { recursive: true });
    await writeFile(join(ROOT, 'bench-results', 'stores.json'), `${JSON.stringify(json, null, 1)}\n`);
    await writeFile(join(ROOT, 'bench-results', 'stores.md'), md);
    process.stdout.write(`${md}\n${JSON.stringify(json)}\n`);
    if (rows.some((r) => !r.verified)) process.exitCode = 1;
  } finally {
    await cluster?.stop().catch(() => undefined);
    await server?.stop().catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}

await main();

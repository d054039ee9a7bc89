/**
 * Reduce slow start on the real cluster (`job.reduceSlowStart`): WordCount and TeraSort at several
 * values, on the embedded 2-worker cluster bench:apps uses (1 map + 1 reduce slot per worker,
 * replication 1, 64 MB blocks), to choose the default. Runs are interleaved (value by value within
 * each repeat) so that a change of machine load spreads over all values; each job's output is
 * checked: WordCount's counts against the generator's, TeraSort's records (order and content)
 * against the run at slow start 1.
 *
 * Reported per job and value: median wall time from submit to the client seeing the end, the ratio
 * to slow start 1 in the same run, when the reduces started relative to the last map's end, and
 * the map output segments the reduces fetched before the last map output was known
 * (SHUFFLE_EARLY_SEGMENTS).
 *
 * Run: npm run bench:slow-start [-- --size-mb 256 --values 0,0.25,0.5,0.75,1 --repeats 3]
 * Writes bench-results/slow-start.json and slow-start.md at the package root.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import type { JobClient } from '../src/runtime/index.js';
import type { LocalCluster } from '../src/local/index.js';
import { writeCorpus } from './lib/corpus.js';
import { startBenchCluster } from './lib/bench-cluster.js';
import { partFiles, readOutputText } from './lib/follow-job.js';
import { median, progressLog, r3, splitLines } from './lib/shell.js';
import { RECORD, SequenceDigest, wholeRecords, writeTeraInputs } from './lib/tera.js';

const SELF = fileURLToPath(import.meta.url);
const MB = 1 << 20;

const log = progressLog();

interface Run {
  job: string;
  slowStart: number;
  repeat: number;
  seconds: number;
  /** First reduce launch minus last map end, s (negative: the reduces started early). */
  reduceStartVsLastMapS: number;
  earlySegments: number;
  verified: boolean;
}

interface JobCase {
  readonly job: string;
  readonly app: string;
  readonly input: string;
  readonly output: string;
  /** undefined when the output is right, else what is wrong. */
  verify(client: JobClient, output: string): Promise<string | undefined>;
}

async function main(): Promise<void> {
  const args = yargs(process.argv.slice(2))
    .option('size-mb', { type: 'number', default: 256, describe: 'input size of each job' })
    .option('values', { type: 'string', default: '0,0.25,0.5,0.75,1', describe: 'slow start values, comma separated' })
    .option('repeats', { type: 'number', default: 3 })
    .strict()
    .parseSync();
  const values = args.values.split(',').map(Number);
  if (values.some((v) => !(v >= 0 && v <= 1)))
    throw new Error(`--values must be fractions in [0, 1], got ${args.values}`);
  if (!values.includes(1)) values.push(1);
  const repeats = Math.max(1, Math.round(args.repeats));
  const targetBytes = Math.round(args.sizeMb * MB);
  const work = await mkdtemp(join(os.tmpdir(), 'minimr-bench-slow-start-'));
  const env = {
    node: process.version,
    platform: `${process.platform} ${os.release()}`,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    loadavgStart: os.loadavg().map(r3),
    loadavgEnd: [] as number[],
    date: new Date().toISOString(),
    sizeMb: args.sizeMb,
    values,
    repeats,
    cluster: { workers: 2, mapSlots: 1, reduceSlots: 1, replication: 1, blockSizeMb: 64, reducers: 2 },
  };
  log(
    `slow start benchmark: ${args.sizeMb} MB per job, ` +
      `values ${values.join(', ')}, ${repeats} repeats; ${env.cpus} ` +
      `CPUs, load ${env.loadavgStart.join(' ')}`,
  );
  const runs: Run[] = [];
  let cluster: LocalCluster | undefined;
  let failure: string | undefined;
  try {
    const local = join(work, 'local');
    await mkdir(local);
    const corpus = await writeCorpus(join(local, 'corpus.txt'), targetBytes);
    const rows = Math.floor(targetBytes / RECORD);
    const tera = await writeTeraInputs(join(local, 'tera.dat'), join(local, 'tera-lines.txt'), rows);
    log(`inputs: corpus ${(corpus.bytes / MB).toFixed(1)} MB, ${rows} TeraGen records`);
    cluster = await startBenchCluster(join(work, 'cluster'));
    const client = cluster.client;
    await client.fs.put(corpus.path, '/bench/text/corpus.txt');
    await client.fs.put(tera.recordsPath, '/bench/tera/input.dat');
    const expected = new Map(corpus.vocabulary.map((w, i) => [w, corpus.counts[i]!] as const).filter(([, c]) => c > 0));
    let teraDigest: string | undefined;
    const cases: JobCase[] = [
      {
        job: 'WordCount',
        app: 'wordcount',
        input: '/bench/text',
        output: '/bench/out/wordcount',
        async verify(c, output) {
          const got = new Map(
            splitLines(await readOutputText(c, output)).map(
              (l) => [l.slice(0, l.indexOf('\t')), Number(l.slice(l.indexOf('\t') + 1))] as const,
            ),
          );
          const wrong =
            [...expected].filter(([w, n]) => got.get(w) !== n).length +
            [...got.keys()].filter((w) => !expected.has(w)).length;
          return wrong === 0 ? undefined : `${wrong} words counted wrong`;
        },
      },
      {
        job: 'TeraSort',
        app: 'terasort',
        input: '/bench/tera/input.dat',
        output: '/bench/out/terasort',
        async verify(c, output) {
          const digest = new SequenceDigest();
          for (const p of await partFiles(c, output))
            for await (const chunk of wholeRecords(c.fs.cat(p), RECORD)) digest.addRecords(chunk);
          if (digest.records !== rows) return `${digest.records} records out, ${rows} in`;
          const d = digest.digest();
          teraDigest ??= d;
          return d === teraDigest ? undefined : 'records in another order than the first run';
        },
      },
    ];
    const app = (name: string) => fileURLToPath(new URL(`../apps/${name}.js`, import.meta.url));
    for (let repeat = 0; repeat < repeats; repeat++) {
      for (const jc of cases) {
        // Slow start 1 first in the first repeat: its TeraSort output is the reference order.
        const order = repeat === 0 ? [1, ...values.filter((v) => v !== 1)] : values;
        for (const slowStart of order) {
          const t0 = performance.now();
          const jobId = await client.submit(app(jc.app), {
            input: [jc.input],
            output: jc.output,
            reducers: 2,
            overwrite: true,
            conf: { 'job.reduceSlowStart': slowStart },
          });
          const status = await client.waitForCompletion(jobId);
          const seconds = (performance.now() - t0) / 1000;
          const attempts = (await client.attempts(jobId)).filter((a) => a.state === 'succeeded');
          const lastMapEnd = Math.max(...attempts.filter((a) => a.kind === 'map').map((a) => a.finishTime ?? 0));
          const reduces = attempts.filter((a) => a.kind === 'reduce');
          const firstReduce = Math.min(...reduces.map((a) => a.startTime));
          const problem = await jc.verify(client, jc.output);
          const run: Run = {
            job: jc.job,
            slowStart,
            repeat,
            seconds,
            reduceStartVsLastMapS: (firstReduce - lastMapEnd) / 1000,
            earlySegments: reduces.reduce((n, a) => n + (a.counters.SHUFFLE_EARLY_SEGMENTS ?? 0), 0),
            verified: problem === undefined,
          };
          runs.push(run);
          log(
            `${jc.job} slow start ${slowStart} ` +
              `(repeat ${repeat + 1}): ${seconds.toFixed(2)} ` +
              `s, ${status.mapsTotal} maps, ` +
              (`reduces from ${run.reduceStartVsLastMapS.toFixed(2)} s after ` +
                `the last map, ${run.earlySegments} segments fetched early, `) +
              `output ${problem ?? 'verified'}`,
          );
        }
      }
    }
  } catch (err) {
    failure = (err as Error).stack ?? String(err);
    log(`FAILED: ${failure}`);
  } finally {
    if (cluster) await cluster.stop().catch((err: unknown) => log(`cluster stop failed: ${(err as Error).message}`));
    await rm(work, { recursive: true, force: true });
  }
  env.loadavgEnd = os.loadavg().map(r3);

  const summary = ['WordCount', 'TeraSort'].flatMap((job) => {
    const base = median(runs.filter((r) => r.job === job && r.slowStart === 1).map((r) => r.seconds));
    return values.map((slowStart) => {
      const mine = runs.filter((r) => r.job === job && r.slowStart === slowStart);
      const seconds = mine.length ? median(mine.map((r) => r.seconds)) : NaN;
      return {
        job,
        slowStart,
        runs: mine.length,
        medianSeconds: r3(seconds),
        ratioToSlowStart1: r3(seconds / base),
        medianReduceStartVsLastMapS: mine.length ? r3(median(mine.map((r) => r.reduceStartVsLastMapS))) : NaN,
        medianEarlySegments: mine.length ? median(mine.map((r) => r.earlySegments)) : NaN,
        verified: mine.every((r) => r.verified),
      };
    });
  });
  const md = [
    '# Reduce slow start on the real cluster',
    '',
    `${env.date}: Node ${env.node}, ${env.platform}, ${env.cpus} ` +
      `x ${env.cpu}, load ${env.loadavgStart.join(' ')} at ` +
      `start, ${env.loadavgEnd.join(' ')} at end ` +
      `(shared machine: compare ratios within the run).`,
    `Embedded cluster: 2 workers, 1 map + 1 reduce slot each, ` +
      `replication 1, 64 MB blocks; ${args.sizeMb} MB per job, 2 ` +
      `reduces; ${repeats} interleaved repeats.`,
    '',
    '| job | slow start | median s | vs slow start 1 | reduces ' +
      'start vs last map end (s) | segments fetched early | output |',
    '|---|---:|---:|---:|---:|---:|---|',
    ...summary.map(
      (s) =>
        `| ${s.job} | ${s.slowStart} | ${s.medianSeconds.toFixed(2)} ` +
        `| ${s.ratioToSlowStart1.toFixed(3)} ` +
        `| ${s.medianReduceStartVsLastMapS.toFixed(2)} ` +
        `| ${s.medianEarlySegments} ` +
        `| ${s.verified ? 'verified' : 'MISMATCH'} |`,
    ),
    '',
    'Time: wall time from submit until the client sees the job end. ' +
      'A reduce launched early holds its reduce slot (separate from ' +
      'map slots) and fetches each map output as its map finishes.',
    '',
  ];
  if (failure) md.push('**The run failed:**', '', '```', failure, '```', '');
  const outDir = resolve(dirname(SELF), '..', '..', 'bench-results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    resolve(outDir, 'slow-start.json'),
    JSON.stringify(
      { env, summary, runs: runs.map((r) => ({ ...r, seconds: r3(r.seconds) })), failure: failure ?? null },
      null,
      2,
    ) + '\n',
  );
  writeFileSync(resolve(outDir, 'slow-start.md'), md.join('\n'));
  process.stdout.write('\n' + md.join('\n'));
  process.stdout.write(`\nwrote ${resolve(outDir, 'slow-start.json')} and slow-start.md\n`);
  if (failure || runs.some((r) => !r.verified)) process.exitCode = 1;
}

await main();

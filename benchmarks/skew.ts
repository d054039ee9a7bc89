/**
 * Skewed keys on heterogeneous workers: hash vs Simple vs Count-Min Sketch partition assignment.
 *
 * A 4-worker local cluster (2 map slots and 1 reduce slot each) whose worker-3 runs with
 * --cpu-throttle 2 (its tasks take 2x as long). Inputs: `--records` lines `key payload`, keys drawn
 * from a Zipf law over `--keys` keys with s = 0.8, 1.1, 1.5, payloads of 20-40 characters. Job:
 * KeyCount (lib/keycount-job.ts: no combiner, so the skew reaches the reducers; the reduce does
 * `--ns-per-byte` of work per input byte, as waiting by default, see that file for why), 4 reducers,
 * P = `--factor` x 4 virtual partitions for simple and cms.
 *
 * Order: one warm-up hash job (so the JobTracker has measured every worker's speed, as a cluster that
 * has run anything has; cms plans at submission and would otherwise see neutral speeds), then for
 * each s the three strategies. Per job: max/mean reducer input bytes, the throttled worker's share,
 * reduce-phase time (first reduce launch to last reduce success, JobTracker clock), job time (client
 * wall time from submit, which includes cms's sampling, to success), assignment cost (the
 * SKEW_ASSIGNMENT_MS counter: the JobTracker's time computing the assignment) and the client's
 * sampling time for cms. Every job's output is checked: the three strategies' outputs, as sorted
 * lines, are identical, and the counts add up to the number of input records.
 *
 * Under FIFO with one reduce slot per worker, hash's reduce i runs on worker-i, so which of hash's
 * reducers the slow worker gets decides hash's result: hash is oblivious to speeds, so on a real
 * cluster that is luck. By default (`--slow-worker all`) the whole comparison runs once with each
 * worker as the slow one, on a fresh cluster each time, and the headline table is the mean over
 * those placements (the expected result when the slow worker is any of them); the per-placement
 * rows follow it. `--slow-worker worker-N` runs one placement.
 *
 * Run: npm run bench:skew [-- --records 200000 --keys 10000 --factor 8 --ns-per-byte 2500 --work latency --slow-worker
 * all]
 * Writes bench-results/skew/skew.json, skew.md and skew.svg.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { createLogger } from '../src/log.js';
import type { JobConf, JobStatus } from '../src/runtime/index.js';
import { LocalCluster } from '../src/local/index.js';
import { barChartFiles, type BarChartOptions, seededRandom, zipfSampler } from '../src/util/index.js';
import { readOutputText } from './lib/follow-job.js';

const SELF = fileURLToPath(import.meta.url);
const JOB = resolve(dirname(SELF), 'lib', 'keycount-job.js');
const SKEWS = [0.8, 1.1, 1.5] as const;
const STRATEGIES = ['hash', 'simple', 'cms'] as const;
const WORKERS = 4;
const REDUCERS = 4;

const T0 = performance.now();
function log(msg: string): void {
  process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`);
}

const args = yargs(process.argv.slice(2))
  .option('records', { type: 'number', default: 200_000 })
  .option('keys', { type: 'number', default: 10_000 })
  .option('factor', { type: 'number', default: 8, describe: 'virtual partitions per reducer for simple and cms' })
  .option('ns-per-byte', { type: 'number', default: 2500, describe: 'reduce work per input byte' })
  .option('slow-worker', {
    type: 'string',
    default: 'all',
    describe: "the worker started with --cpu-throttle 2, or 'all' for each in turn",
  })
  .option('work', { choices: ['latency', 'cpu'] as const, default: 'latency' as const })
  .option('keep', { type: 'boolean', default: false })
  .strict()
  .parseSync();
const PLACEMENTS =
  args['slow-worker'] === 'all' ? Array.from({ length: WORKERS }, (_, i) => `worker-${i}`) : [args['slow-worker']];

function zipfInput(records: number, keys: number, s: number, seed: number): Buffer {
  const next = seededRandom(seed);
  const rank = zipfSampler(keys, s, next);
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const lines: string[] = [];
  for (let i = 0; i < records; i++) {
    let payload = '';
    const n = 20 + Math.floor(next() * 21);
    for (let j = 0; j < n; j++) payload += alphabet[Math.floor(next() * alphabet.length)];
    lines.push(`k${rank().toString(36)} ${payload}`);
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

interface Row {
  slowWorker: string;
  s: number;
  strategy: string;
  jobId: string;
  row: number | null;
  reducerInputBytes: number[];
  reducerWorkers: string[];
  maxOverMean: number;
  slowWorkerShare: number;
  reducePhaseS: number;
  jobS: number;
  assignmentMs: number;
  sampleMs: number | null;
  speeds: Record<string, number>;
  estimatedMakespan: number | null;
}

function rowOf(slowWorker: string, s: number, strategy: string, status: JobStatus, jobS: number): Row {
  const skew = status.skew!;
  const bytes = skew.reducers.map((r) => r.inputBytes ?? 0);
  const total = bytes.reduce((a, b) => a + b, 0);
  const mean = total / bytes.length;
  const slow = skew.reducers.filter((r) => r.workerId === slowWorker).reduce((a, r) => a + (r.inputBytes ?? 0), 0);
  return {
    slowWorker,
    s,
    strategy,
    jobId: status.jobId,
    row: skew.row ?? null,
    reducerInputBytes: bytes,
    reducerWorkers: skew.reducers.map((r) => r.workerId ?? '?'),
    maxOverMean: Math.max(...bytes) / mean,
    slowWorkerShare: slow / total,
    reducePhaseS: (skew.reducePhaseMs ?? NaN) / 1000,
    jobS,
    assignmentMs: status.counters.SKEW_ASSIGNMENT_MS ?? NaN,
    sampleMs: skew.sampleMs ?? null,
    speeds: skew.speeds ?? {},
    estimatedMakespan: skew.estimatedMakespan ?? null,
  };
}

/** One row per (s, strategy): the mean over slow-worker placements (the max for the assignment cost). */
function meanRows(rows: readonly Row[]): Row[] {
  const out: Row[] = [];
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (const s of SKEWS) {
    for (const strategy of STRATEGIES) {
      const group = rows.filter((r) => r.s === s && r.strategy === strategy);
      if (group.length === 0) continue;
      const samples = group.map((r) => r.sampleMs).filter((x): x is number => x !== null);
      out.push({
        ...group[0]!,
        slowWorker: group.length > 1 ? `mean of ${group.length}` : group[0]!.slowWorker,
        row: group.length > 1 ? null : group[0]!.row,
        maxOverMean: avg(group.map((r) => r.maxOverMean)),
        slowWorkerShare: avg(group.map((r) => r.slowWorkerShare)),
        reducePhaseS: avg(group.map((r) => r.reducePhaseS)),
        jobS: avg(group.map((r) => r.jobS)),
        assignmentMs: Math.max(...group.map((r) => r.assignmentMs)),
        sampleMs: samples.length ? avg(samples) : null,
      });
    }
  }
  return out;
}

function table(rows: readonly Row[]): string {
  const head =
    '| slow worker | s | strategy | row | max/mean reducer input | ' +
    "slow worker's share | reduce phase (s) | vs hash | job (s) | " +
    'assignment (ms) | sample (ms) |';
  const lines = [head, '|---|---|---|---|---|---|---|---|---|---|---|'];
  for (const r of rows) {
    const hash = rows.find((h) => h.s === r.s && h.strategy === 'hash' && h.slowWorker === r.slowWorker)!;
    const delta = r.strategy === 'hash' ? '' : `${(100 * (r.reducePhaseS / hash.reducePhaseS - 1)).toFixed(0)}%`;
    lines.push(
      `| ${r.slowWorker} | ${r.s} | ${r.strategy} | ${r.row ?? ''} ` +
        `| ${r.maxOverMean.toFixed(2)} ` +
        `| ${(100 * r.slowWorkerShare).toFixed(1)}% ` +
        `| ${r.reducePhaseS.toFixed(2)} | ${delta} ` +
        `| ${r.jobS.toFixed(2)} | ${r.assignmentMs.toFixed(2)} ` +
        `| ${r.sampleMs === null ? '' : r.sampleMs.toFixed(0)} |`,
    );
  }
  return lines.join('\n');
}

/** Grouped bars of the reduce-phase time, one group per s, one bar per strategy. */
function barsChart(rows: readonly Row[]): BarChartOptions {
  return {
    title: 'Reduce-phase time (s), 4 workers, one 2x slower',
    yLabel: 'reduce phase (s)',
    categories: SKEWS.map((s) => `s = ${s}`),
    series: STRATEGIES.map((strategy) => ({
      name: strategy,
      values: SKEWS.map((s) => rows.find((x) => x.s === s && x.strategy === strategy)?.reducePhaseS ?? 0),
    })),
  };
}

async function main(): Promise<void> {
  // Generated before the cluster starts: the JobTracker runs in this process, and seconds of
  // generation would starve its heartbeat handling.
  const inputs = new Map<number, Buffer>();
  for (const s of SKEWS) inputs.set(s, zipfInput(args.records, args.keys, s, Math.round(s * 1000)));
  const rows: Row[] = [];
  for (const slowWorker of PLACEMENTS) rows.push(...(await runPlacement(slowWorker, inputs)));
  const means = meanRows(rows);
  const md = [
    `# Skew: hash vs simple vs cms`,
    '',
    `${WORKERS} workers (2 map + 1 reduce slot each), one of them ` +
      `throttled 2x (${PLACEMENTS.join(', ')} in turn; the first table ` +
      `is the mean over placements); KeyCount, ${args.records} records ` +
      `over ${args.keys} Zipf keys per s, ` +
      (`${REDUCERS} reducers, P = ${args.factor} x ${REDUCERS} for ` +
        `simple and cms; reduce work ${args['ns-per-byte']} ns/byte ` +
        `(${args.work}). `) +
      `Machine: ${os.cpus().length} CPUs, Node ${process.version}.`,
    '',
    table(means),
    '',
    ...(PLACEMENTS.length > 1 ? ['Per placement of the slow worker:', '', table(rows), ''] : []),
  ].join('\n');
  const outDir = resolve(dirname(SELF), '..', '..', 'bench-results', 'skew');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    join(outDir, 'skew.json'),
    `${JSON.stringify({ settings: { ...args, workers: WORKERS, reducers: REDUCERS, placements: PLACEMENTS }, means, rows }, null, 2)}\n`,
  );
  writeFileSync(join(outDir, 'skew.md'), md);
  for (const [name, text] of barChartFiles('skew', barsChart(means))) writeFileSync(join(outDir, name), text);
  process.stdout.write(`${md}\nwritten to ${outDir}/skew.{json,md,svg,csv}\n`);
}

/** The whole comparison on a fresh cluster whose `slowWorker` is throttled 2x. */
async function runPlacement(slowWorker: string, inputs: ReadonlyMap<number, Buffer>): Promise<Row[]> {
  const dir = await mkdtemp(join(os.tmpdir(), 'minimr-bench-skew-'));
  log(`starting a ${WORKERS}-worker local cluster in ${dir}; ${slowWorker} throttled 2x`);
  const cluster = await LocalCluster.start({
    dataDir: dir,
    workers: WORKERS,
    mapSlots: 2,
    reduceSlots: 1,
    blockSize: 1 << 20,
    replication: 1,
    heartbeatMs: 500,
    throttleOf: (i) => (`worker-${i}` === slowWorker ? 2 : 1),
    logger: createLogger('bench-skew', process.env.MINIMR_LOG_LEVEL ?? 'warn'),
  });
  const rows: Row[] = [];
  const params = { workNsPerByte: args['ns-per-byte'], work: args.work };
  try {
    for (const s of SKEWS) {
      const input = inputs.get(s)!;
      await cluster.client.fs.put(input, `/skew/in-${s}.txt`);
      log(`input s=${s}: ${args.records} records, ${(input.length / 1e6).toFixed(1)} MB`);
    }
    const run = async (s: number, strategy: string, out: string) => {
      const conf: JobConf = {
        'skew.strategy': strategy as JobConf['skew.strategy'],
        'skew.partitionFactor': strategy === 'hash' ? 1 : args.factor,
      };
      const started = performance.now();
      const status = await cluster.client.run(JOB, {
        input: [`/skew/in-${s}.txt`],
        output: out,
        reducers: REDUCERS,
        params,
        conf,
        overwrite: true,
      });
      return { status, jobS: (performance.now() - started) / 1000 };
    };
    log('warm-up job (hash, s=0.8): measures worker speeds');
    await run(0.8, 'hash', '/skew/warmup');
    for (const s of SKEWS) {
      let reference: string | undefined;
      for (const strategy of STRATEGIES) {
        const out = `/skew/out-${s}-${strategy}`;
        const { status, jobS } = await run(s, strategy, out);
        const row = rowOf(slowWorker, s, strategy, status, jobS);
        rows.push(row);
        const lines = (await readOutputText(cluster.client, out)).split('\n').filter(Boolean).sort().join('\n');
        const counted = lines.split('\n').reduce((n, l) => n + Number(l.split('\t')[1]), 0);
        if (counted !== args.records)
          throw new Error(`${strategy} at s=${s} counted ${counted} records of ${args.records}`);
        if (reference === undefined) reference = lines;
        else if (lines !== reference) throw new Error(`${strategy} at s=${s}: output differs from hash's`);
        log(
          `${slowWorker} slow, s=${s} ${strategy.padEnd(6)} reduce ` +
            `phase ${row.reducePhaseS.toFixed(2)}s, ` +
            `job ${row.jobS.toFixed(2)}s, ` +
            `max/mean ${row.maxOverMean.toFixed(2)}, ` +
            `slow share ${(100 * row.slowWorkerShare).toFixed(1)}%, assignment ${row.assignmentMs.toFixed(2)} ms` +
            (row.row !== null ? `, row ${row.row}, sample ${row.sampleMs?.toFixed(0)} ms` : '') +
            `, speeds ${JSON.stringify(row.speeds)}`,
        );
      }
    }
  } finally {
    await cluster.stop();
    if (!args.keep) await rm(dir, { recursive: true, force: true });
  }
  return rows;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:skew failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});

/**
 * What does it cost to get a task runner ready, and where does a tiny job's time go? Compares,
 * 20 runs each:
 *   (a) child_process.fork of a node process that imports msgpackr and says "ready" over IPC,
 *   (b) a worker_threads Worker doing the same,
 *   (c) one message round trip to an already running (pre-spawned) child process,
 *   (d) the same round trip to a pre-spawned worker thread, for comparison with (c);
 * then (e) a tiny WordCount (1 KB, one map, one reduce) end to end on a warm embedded cluster (2
 * workers with 1 map + 1 reduce slot, as bench:apps): `--tiny-warmup` untimed runs, then
 * `--tiny-runs` timed ones, each from the client's submit to the client seeing the job end,
 * broken down into phases along the job's critical path (lib/tiny-job.ts). The first run's
 * output is checked against a word count computed here.
 * Prints Markdown tables (median, p95) and writes bench-results/launch.{json,md} at the package
 * root. This module is also the child and the worker (chosen by an env var / workerData), so the
 * benchmark is one file and the child resolves msgpackr from the package's node_modules.
 *
 * Run: npm run bench:launch [-- --tiny-runs 20 --tiny-warmup 5]
 *      (or: npx tsc -p . && node dist/benchmarks/launch.js)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import yargs from 'yargs';
import { createLogger } from '../src/log.js';
import { LocalCluster } from '../src/local/index.js';
import { writeCorpus } from './lib/corpus.js';
import { readOutputText } from './lib/follow-job.js';
import { median as medianOf, progressLog, splitLines } from './lib/shell.js';
import { breakdown, PHASES, type Phase, type TinyRun } from './lib/tiny-job.js';

const RUNS = 20;
// Untimed first launches, so that a cold disk cache does not land in the samples.
const WARMUP = 2;
const ROLE_ENV = 'MINIMR_LAUNCH_BENCH_ROLE';

type Msg = { type: 'ready' } | { type: 'ping'; id: number } | { type: 'pong'; id: number } | { type: 'exit' };

/** What a real task runner must do before it can take work: load the codec library. */
async function loadRuntimeDeps(): Promise<void> {
  const { pack, unpack } = await import('msgpackr');
  unpack(pack({ warm: true }));
}

async function runChildProcess(): Promise<void> {
  await loadRuntimeDeps();
  process.on('message', (m: Msg) => {
    if (m.type === 'ping') process.send!({ type: 'pong', id: m.id } satisfies Msg);
    else if (m.type === 'exit') process.disconnect();
  });
  process.send!({ type: 'ready' } satisfies Msg);
}

async function runWorkerThread(): Promise<void> {
  await loadRuntimeDeps();
  const port = parentPort!;
  port.on('message', (m: Msg) => {
    if (m.type === 'ping') port.postMessage({ type: 'pong', id: m.id } satisfies Msg);
    else if (m.type === 'exit') port.close();
  });
  port.postMessage({ type: 'ready' } satisfies Msg);
}

const SELF = fileURLToPath(import.meta.url);

function nextMessage(source: ChildProcess | Worker, want: Msg['type']): Promise<Msg> {
  return new Promise((resolvePromise, reject) => {
    const onMessage = (m: Msg) => {
      if (m.type !== want) return;
      cleanup();
      resolvePromise(m);
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`runner exited with ${code} before sending ${want}`));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      source.off('message', onMessage);
      source.off('exit', onExit);
      source.off('error', onError);
    };
    source.on('message', onMessage);
    source.on('exit', onExit);
    source.on('error', onError);
  });
}

function spawnChild(): ChildProcess {
  return fork(SELF, [], {
    env: { ...process.env, [ROLE_ENV]: 'child' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

function spawnWorker(): Worker {
  return new Worker(SELF, { workerData: { role: 'worker' } });
}

async function stopChild(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.send({ type: 'exit' } satisfies Msg);
  await exited;
}

async function stopWorker(worker: Worker): Promise<void> {
  await worker.terminate();
}

/** Launch to "ready", then shut down outside the timed section. */
async function timeLaunch<T extends ChildProcess | Worker>(
  spawn: () => T,
  stop: (r: T) => Promise<void>,
): Promise<number> {
  const t0 = performance.now();
  const runner = spawn();
  await nextMessage(runner, 'ready');
  const ms = performance.now() - t0;
  await stop(runner);
  return ms;
}

async function timeRoundTrips(runner: ChildProcess | Worker, send: (m: Msg) => void, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = -WARMUP; i < n; i++) {
    const t0 = performance.now();
    const reply = nextMessage(runner, 'pong');
    send({ type: 'ping', id: i });
    await reply;
    if (i >= 0) out.push(performance.now() - t0);
  }
  return out;
}

async function sample(n: number, once: () => Promise<number>): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await once();
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await once());
  return out;
}

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Nearest-rank percentile: with 20 runs, p95 is the 19th smallest. */
function percentile(xs: number[], p: number): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}

interface Row {
  id: string;
  what: string;
  runs: number;
  medianMs: number;
  p95Ms: number;
  minMs: number;
  maxMs: number;
  samplesMs: number[];
}

function row(id: string, what: string, samples: number[]): Row {
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return {
    id,
    what,
    runs: samples.length,
    medianMs: r(median(samples)),
    p95Ms: r(percentile(samples, 0.95)),
    minMs: r(Math.min(...samples)),
    maxMs: r(Math.max(...samples)),
    samplesMs: samples.map(r),
  };
}

const log = progressLog();

interface TinyJobResult {
  inputBytes: number;
  warmup: number;
  verified: boolean;
  runs: TinyRun[];
  medianMs: number;
  p95Ms: number;
  phaseMediansMs: Record<Phase, number>;
  warmLaunches: number;
  attempts: number;
}

/** (e): a tiny WordCount on a warm 2-worker cluster, end to end, with its breakdown. */
async function tinyJob(runs: number, warmup: number): Promise<TinyJobResult> {
  const work = await mkdtemp(join(os.tmpdir(), 'minimr-bench-launch-'));
  const cluster = await LocalCluster.start({
    dataDir: join(work, 'cluster'),
    workers: 2,
    mapSlots: 1,
    reduceSlots: 1,
    replication: 1,
    logger: createLogger('bench', process.env.MINIMR_LOG_LEVEL ?? 'warn'),
  });
  try {
    const client = cluster.client;
    const corpus = await writeCorpus(join(work, 'tiny.txt'), 1024);
    const text = await readFile(corpus.path, 'utf8');
    await client.fs.put(corpus.path, '/bench/tiny/tiny.txt');
    const app = fileURLToPath(new URL('../apps/wordcount.js', import.meta.url));
    log(`tiny job: WordCount of ${corpus.bytes} bytes on 2 workers, ${warmup} untimed + ${runs} timed runs`);
    const want = new Map<string, number>();
    for (const w of text.split(/[ \t\r\n\f]+/)) if (w) want.set(w, (want.get(w) ?? 0) + 1);
    let verified = false;
    const timed: TinyRun[] = [];
    for (let i = -warmup; i < runs; i++) {
      const t0 = Date.now();
      const jobId = await client.submit(app, { input: ['/bench/tiny'], output: '/bench/out/tiny', overwrite: true });
      const status = await client.waitForCompletion(jobId);
      const tEnd = Date.now();
      const run = breakdown(status, await client.attempts(jobId), t0, tEnd);
      if (i === -warmup) {
        const got = new Map(
          splitLines(await readOutputText(client, '/bench/out/tiny')).map(
            (l) => [l.slice(0, l.lastIndexOf('\t')), Number(l.slice(l.lastIndexOf('\t') + 1))] as const,
          ),
        );
        verified = got.size === want.size && [...want].every(([w, n]) => got.get(w) === n);
        log(`tiny job output ${verified ? 'verified' : 'MISMATCH'} (${got.size} words)`);
      }
      if (i >= 0) timed.push(run);
      log(
        `tiny ${i < 0 ? 'warm-up' : `run ${i + 1}`}: ${run.totalMs} ` +
          `ms, ${run.warmLaunches}/${run.attempts} attempts in warm ` +
          `processes`,
      );
    }
    const totals = timed.map((r) => r.totalMs);
    const phaseMediansMs = Object.fromEntries(
      PHASES.map(([p]) => [p, medianOf(timed.map((r) => r.phasesMs[p]))]),
    ) as Record<Phase, number>;
    return {
      inputBytes: corpus.bytes,
      warmup,
      verified,
      runs: timed,
      medianMs: medianOf(totals),
      p95Ms: percentile(totals, 0.95),
      phaseMediansMs,
      warmLaunches: timed.reduce((n, r) => n + r.warmLaunches, 0),
      attempts: timed.reduce((n, r) => n + r.attempts, 0),
    };
  } finally {
    await cluster.stop();
    await rm(work, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = yargs(process.argv.slice(2))
    .option('tiny-runs', { type: 'number', default: 20, describe: 'timed tiny WordCount runs' })
    .option('tiny-warmup', { type: 'number', default: 5, describe: 'untimed runs first, so that the cluster is warm' })
    .strict()
    .parseSync();
  const rows: Row[] = [];
  log('launch costs: fork, worker thread, round trips');

  rows.push(
    row(
      'a',
      'fork child process, import msgpackr, ready over IPC',
      await sample(RUNS, () => timeLaunch(spawnChild, stopChild)),
    ),
  );
  rows.push(
    row(
      'b',
      'worker_threads Worker, import msgpackr, ready message',
      await sample(RUNS, () => timeLaunch(spawnWorker, stopWorker)),
    ),
  );

  const child = spawnChild();
  await nextMessage(child, 'ready');
  rows.push(
    row(
      'c',
      'message round trip to a pre-spawned child process',
      await timeRoundTrips(child, (m) => child.send(m), RUNS),
    ),
  );
  await stopChild(child);

  const worker = spawnWorker();
  await nextMessage(worker, 'ready');
  rows.push(
    row(
      'd',
      'message round trip to a pre-spawned worker thread',
      await timeRoundTrips(worker, (m) => worker.postMessage(m), RUNS),
    ),
  );
  await stopWorker(worker);

  const loadBefore = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const tiny = await tinyJob(Math.max(1, Math.round(args.tinyRuns)), Math.max(1, Math.round(args.tinyWarmup)));
  const loadAfter = os.loadavg().map((x) => Math.round(x * 100) / 100);

  const env = {
    node: process.version,
    platform: `${process.platform} ${os.release()}`,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100),
    date: new Date().toISOString(),
    runs: RUNS,
    warmup: WARMUP,
  };
  const fmt = (x: number) => x.toFixed(x < 1 ? 3 : 1);
  const md = [
    '# Task-runner launch cost',
    '',
    `Node ${env.node}, ${env.platform}, ${env.cpus} x ${env.cpu}, ` +
      `load ${env.loadavg.join(' ')}; ${RUNS} timed runs each ` +
      `after ${WARMUP} untimed.`,
    '',
    '| | what | median (ms) | p95 (ms) | min (ms) | max (ms) |',
    '|---|---|---:|---:|---:|---:|',
    ...rows.map(
      (r) => `| ${r.id} | ${r.what} | ${fmt(r.medianMs)} | ${fmt(r.p95Ms)} | ${fmt(r.minMs)} | ${fmt(r.maxMs)} |`,
    ),
    '',
    `## (e) Tiny job end to end on a warm cluster`,
    '',
    `WordCount of ${tiny.inputBytes} bytes (1 map, 1 reduce) on an ` +
      `embedded cluster of 2 workers (1 map + 1 reduce slot each), ` +
      (`${tiny.runs.length} timed runs after ${tiny.warmup} untimed; ` +
        `load ${loadBefore.join(' ')} before, ${loadAfter.join(' ')} ` +
        `after. `) +
      (`Output ${tiny.verified ? 'verified' : 'MISMATCH'}; ${tiny.warmLaunches} ` +
        `of ${tiny.attempts} attempts ran in a warm task process.`),
    '',
    `**Median ${tiny.medianMs.toFixed(0)} ms end to end** ` +
      `(p95 ${tiny.p95Ms.toFixed(0)} ms; ` +
      `runs: ${tiny.runs.map((r) => r.totalMs).join(', ')} ms).`,
    '',
    'Where it goes, along the critical path (median of each phase ' +
      'over the runs; medians need not add up to the median total):',
    '',
    '| phase | median (ms) | what |',
    '|---|---:|---|',
    ...PHASES.map(([p, what]) => `| ${p} | ${tiny.phaseMediansMs[p].toFixed(0)} | ${what} |`),
    '',
  ].join('\n');

  const outDir = resolve(dirname(SELF), '..', '..', 'bench-results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    resolve(outDir, 'launch.json'),
    JSON.stringify(
      { env, results: rows, tinyJob: { ...tiny, loadavgBefore: loadBefore, loadavgAfter: loadAfter } },
      null,
      2,
    ) + '\n',
  );
  writeFileSync(resolve(outDir, 'launch.md'), md);
  process.stdout.write(md);
  process.stdout.write(`\nwrote ${resolve(outDir, 'launch.json')} and launch.md\n`);
  if (!tiny.verified) process.exitCode = 1;
}

if (process.env[ROLE_ENV] === 'child') {
  await runChildProcess();
} else if (!isMainThread && (workerData as { role?: string } | null)?.role === 'worker') {
  await runWorkerThread();
} else {
  await main();
}

/**
 * What does it cost to get a task runner ready? Compares, 20 runs each:
 *   (a) child_process.fork of a node process that imports msgpackr and says "ready" over IPC,
 *   (b) a worker_threads Worker doing the same,
 *   (c) one message round trip to an already running (pre-spawned) child process,
 *   (d) the same round trip to a pre-spawned worker thread, for comparison with (c).
 * Prints a Markdown table (median, p95) and writes bench-results/launch.{json,md} at the package
 * root. This module is also the child and the worker (chosen by an env var / workerData), so the
 * benchmark is one file and the child resolves msgpackr from the package's node_modules.
 *
 * Run: npm run bench:launch   (or: npx tsc -p . && node dist/benchmarks/launch.js)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

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
  return fork(SELF, [], { env: { ...process.env, [ROLE_ENV]: 'child' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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
async function timeLaunch<T extends ChildProcess | Worker>(spawn: () => T, stop: (r: T) => Promise<void>): Promise<number> {
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

async function main(): Promise<void> {
  const rows: Row[] = [];

  rows.push(row('a', 'fork child process, import msgpackr, ready over IPC', await sample(RUNS, () => timeLaunch(spawnChild, stopChild))));
  rows.push(row('b', 'worker_threads Worker, import msgpackr, ready message', await sample(RUNS, () => timeLaunch(spawnWorker, stopWorker))));

  const child = spawnChild();
  await nextMessage(child, 'ready');
  rows.push(row('c', 'message round trip to a pre-spawned child process', await timeRoundTrips(child, (m) => child.send(m), RUNS)));
  await stopChild(child);

  const worker = spawnWorker();
  await nextMessage(worker, 'ready');
  rows.push(row('d', 'message round trip to a pre-spawned worker thread', await timeRoundTrips(worker, (m) => worker.postMessage(m), RUNS)));
  await stopWorker(worker);

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
    `Node ${env.node}, ${env.platform}, ${env.cpus} x ${env.cpu}, load ${env.loadavg.join(' ')}; ${RUNS} timed runs each after ${WARMUP} untimed.`,
    '',
    '| | what | median (ms) | p95 (ms) | min (ms) | max (ms) |',
    '|---|---|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.id} | ${r.what} | ${fmt(r.medianMs)} | ${fmt(r.p95Ms)} | ${fmt(r.minMs)} | ${fmt(r.maxMs)} |`),
    '',
  ].join('\n');

  const outDir = resolve(dirname(SELF), '..', '..', 'bench-results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(resolve(outDir, 'launch.json'), JSON.stringify({ env, results: rows }, null, 2) + '\n');
  writeFileSync(resolve(outDir, 'launch.md'), md);
  process.stdout.write(md);
  process.stdout.write(`\nwrote ${resolve(outDir, 'launch.json')} and launch.md\n`);
}

if (process.env[ROLE_ENV] === 'child') {
  await runChildProcess();
} else if (!isMainThread && (workerData as { role?: string } | null)?.role === 'worker') {
  await runWorkerThread();
} else {
  await main();
}

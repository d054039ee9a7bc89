/**
 * Runs a sweep (sweep.ts) on this machine's cores: one worker thread per core (or `threads`), each
 * sent the next pending unit as it finishes one, every result appended to the results file as a JSON
 * line the moment it arrives. Units already in the file are skipped, so a sweep stopped (Ctrl-C,
 * `signal`) and run again finishes what is left. A unit that fails stops the sweep with its error:
 * the units done so far stay in the file.
 */
import { randomBytes } from 'node:crypto';
import { appendFile, readFile, truncate } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { JsonValue } from '../api/index.js';
import { MinimrError, type SerializedError } from '../errors.js';
import { finishedUnits, type SweepResult, type SweepSpec, type SweepUnit, sweepUnits } from './sweep.js';

export interface SweepRunOptions {
  /** The results file (JSON lines), appended to; what it holds already is not run again. */
  readonly out: string;
  /** Worker threads (default: the machine's cores). */
  readonly threads?: number;
  /** Stops the sweep: the units running are dropped (they run again when the sweep is resumed). */
  readonly signal?: AbortSignal;
  readonly onProgress?: (done: number, total: number, result: SweepResult) => void;
}

export interface SweepRun {
  /** Every unit's result, those of earlier runs included, in the sweep's order (all, unless stopped). */
  readonly results: SweepResult[];
  readonly ran: number;
  readonly skipped: number;
  readonly stopped: boolean;
  readonly wallS: number;
}

/** The units a results file holds; a last line cut short by an interruption is cut off (the next would join it). */
async function resultsSoFar(out: string): Promise<Map<string, SweepResult>> {
  const text = await readFile(out, 'utf8').catch(() => '');
  if (text !== '' && !text.endsWith('\n'))
    await truncate(out, Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1)));
  return finishedUnits(text);
}

type ThreadMessage = { result: SweepResult } | { key: string; error: SerializedError };

export async function runSweep(spec: SweepSpec, options: SweepRunOptions): Promise<SweepRun> {
  const started = performance.now();
  const units = sweepUnits(spec);
  const finished = await resultsSoFar(options.out);
  const pending = units.filter((u) => !finished.has(u.key));
  const skipped = units.length - pending.length;
  let ran = 0;
  let written = Promise.resolve();
  const threads = Math.max(1, Math.min(options.threads ?? availableParallelism(), pending.length));
  const workers: Worker[] = [];
  const outcome = await new Promise<{ stopped: boolean; error?: unknown }>((resolve) => {
    if (pending.length === 0) return resolve({ stopped: false });
    let next = 0;
    let running = 0;
    let settled = false;
    const finish = (result: { stopped: boolean; error?: unknown }): void => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    const dispatch = (worker: Worker): void => {
      if (settled) return;
      if (next >= pending.length) {
        if (running === 0) finish({ stopped: false });
        return;
      }
      running++;
      worker.postMessage(pending[next++]);
    };
    options.signal?.addEventListener('abort', () => finish({ stopped: true }), { once: true });
    if (options.signal?.aborted) return finish({ stopped: true });
    for (let i = 0; i < threads; i++) {
      const worker = new Worker(new URL('./sweep-thread.js', import.meta.url), { workerData: spec });
      workers.push(worker);
      worker.on('error', (err) => finish({ stopped: true, error: err }));
      worker.on('message', (message: ThreadMessage) => {
        running--;
        if ('error' in message) {
          finish({
            stopped: true,
            error: new MinimrError('EBADCONF', `sweep unit ${message.key}: ${message.error.message}`, {
              unit: message.key,
            }),
          });
          return;
        }
        if (settled) return;
        const result = message.result;
        finished.set(result.key, result);
        ran++;
        written = written.then(() => appendFile(options.out, `${JSON.stringify(result)}\n`));
        options.onProgress?.(skipped + ran, units.length, result);
        dispatch(worker);
      });
      dispatch(worker);
    }
  });
  await Promise.all(workers.map((w) => w.terminate()));
  await written;
  if (outcome.error) throw outcome.error;
  return {
    results: units.flatMap((u) => finished.get(u.key) ?? []),
    ran,
    skipped,
    stopped: outcome.stopped,
    wallS: (performance.now() - started) / 1000,
  };
}

/** What a sweep on a cluster needs of its client (the runtime's JobClient). */
export interface SweepClusterClient {
  submit(
    modulePath: string,
    options: { output: string; reducers: number; params: Record<string, JsonValue> },
  ): Promise<string>;
  waitForCompletion(jobId: string): Promise<unknown>;
  readonly fs: {
    list(path: string): Promise<readonly { path: string }[]>;
    cat(path: string): AsyncIterable<Buffer>;
    remove(path: string, options: { recursive: boolean }): Promise<void>;
  };
}

/**
 * Runs the sweep's pending units as one map-only job on a cluster (apps/sweep-slice.ts), `maps`
 * slices dealt round-robin, and appends what its maps wrote to the results file in the sweep's order.
 * The job's own output, in a hidden directory of the block store, is removed after.
 */
export async function runSweepOnCluster(
  spec: SweepSpec,
  options: { out: string; client: SweepClusterClient; maps: number },
): Promise<SweepRun & { jobId?: string }> {
  const started = performance.now();
  const units = sweepUnits(spec);
  const finished = await resultsSoFar(options.out);
  const pending = units.filter((u) => !finished.has(u.key));
  const skipped = units.length - pending.length;
  if (pending.length === 0)
    return { results: units.map((u) => finished.get(u.key)!), ran: 0, skipped, stopped: false, wallS: 0 };
  const maps = Math.max(1, Math.min(options.maps, pending.length));
  const slices: SweepUnit[][] = Array.from({ length: maps }, () => []);
  pending.forEach((unit, i) => slices[i % maps]!.push(unit));
  const output = `/.sweep-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const client = options.client;
  const jobId = await client.submit(SWEEP_SLICE_MODULE, {
    output,
    reducers: 0,
    params: { spec: spec as unknown as JsonValue, slices: slices as unknown as JsonValue },
  });
  const ran = new Map<string, SweepResult>();
  try {
    await client.waitForCompletion(jobId);
    for (const file of await client.fs.list(output)) {
      if (!/\/part-m-\d+$/.test(file.path)) continue;
      const chunks: Buffer[] = [];
      for await (const chunk of client.fs.cat(file.path)) chunks.push(chunk);
      for (const line of Buffer.concat(chunks).toString('utf8').split('\n')) {
        const tab = line.indexOf('\t');
        if (tab < 0) continue;
        const result = JSON.parse(line.slice(tab + 1)) as SweepResult;
        ran.set(result.key, result);
      }
    }
  } finally {
    await client.fs.remove(output, { recursive: true }).catch(() => undefined);
  }
  const lines = pending.flatMap((u) => {
    const result = ran.get(u.key);
    if (result) finished.set(u.key, result);
    return result ? [`${JSON.stringify(result)}\n`] : [];
  });
  await appendFile(options.out, lines.join(''));
  return {
    results: units.flatMap((u) => finished.get(u.key) ?? []),
    ran: ran.size,
    skipped,
    stopped: ran.size < pending.length,
    wallS: (performance.now() - started) / 1000,
    jobId,
  };
}

const SWEEP_SLICE_MODULE = fileURLToPath(new URL('../../apps/sweep-slice.js', import.meta.url));

/**
 * Runs a sweep (sweep.ts) on this machine's cores: one worker thread per core (or `threads`), each
 * sent the next pending unit as it finishes one, every result appended to the results file as a JSON
 * line the moment it arrives. Units already in the file are skipped, so a sweep stopped (Ctrl-C,
 * `signal`) and run again finishes what is left. A unit that fails stops the sweep with its error:
 * the units done so far stay in the file.
 */
import { appendFile, readFile, truncate } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { MinimrError, type SerializedError } from '../errors.js';
import { finishedUnits, type SweepResult, type SweepSpec, sweepUnits } from './sweep.js';

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

type ThreadMessage = { result: SweepResult } | { key: string; error: SerializedError };

export async function runSweep(spec: SweepSpec, options: SweepRunOptions): Promise<SweepRun> {
  const started = performance.now();
  const units = sweepUnits(spec);
  const text = await readFile(options.out, 'utf8').catch(() => '');
  // A last line cut short by an interruption goes, or the next result would be appended onto it.
  if (text !== '' && !text.endsWith('\n'))
    await truncate(options.out, Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1)));
  const finished = finishedUnits(text);
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

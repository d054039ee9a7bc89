/** How the commands that run or show jobs (`local --example`, `submit`, `job`) print them. */
import type { SerializedError } from '../errors.js';
import type { JobClient, JobStatus } from '../runtime/index.js';
import { escapeControlCharacters } from '../util/index.js';

/** Shows map/reduce progress: one updating line on a terminal, a line per change otherwise. */
export function progressPrinter(jobId: string): (s: JobStatus) => void {
  const tty = process.stderr.isTTY;
  let last = '';
  let toldStopped = false;
  return (s) => {
    if (s.schedulingStopped !== undefined && !toldStopped) {
      toldStopped = true;
      process.stderr.write(`${tty ? '\n' : ''}scheduling stopped: ${escapeControlCharacters(s.schedulingStopped)}\n`);
    }
    const line =
      `${jobId} ${s.state.padEnd(9)} ` +
      `map ${String(Math.floor(s.mapProgress * 100)).padStart(3)}% ` +
      `reduce ${String(Math.floor(s.reduceProgress * 100)).padStart(3)}%`;
    if (line === last) return;
    last = line;
    if (tty) process.stderr.write(`\r${line}${s.state === 'running' || s.state === 'pending' ? '' : '\n'}`);
    else process.stderr.write(`${line}\n`);
  };
}

/** A job's time: start to finish, or so far while it runs ('-' before it starts). */
export function jobDuration(s: JobStatus, now = Date.now()): string {
  if (!s.startTime) return '-';
  return `${(((s.finishTime || now) - s.startTime) / 1000).toFixed(2)}s`;
}

export function printStatus(s: JobStatus): void {
  const secs = jobDuration(s);
  process.stdout.write(
    `${s.jobId}  ${escapeControlCharacters(s.name)}  ${s.user} ` +
      ` ${s.state}  maps ${s.mapsCompleted}/${s.mapsTotal}  ` +
      `reduces ${s.reducesCompleted}/${s.reducesTotal}  ${secs}  ` +
      `output ${s.outputPath}\n`,
  );
  if (s.error) process.stdout.write(`  error ${s.error.code}: ${s.error.message}\n`);
  if (s.schedulingStopped !== undefined)
    process.stdout.write(`  scheduling stopped: ${escapeControlCharacters(s.schedulingStopped)}\n`);
}

/** After a submit: the job id (`--no-wait`), or its progress until it ends, then its status and counters. */
export async function followJob(client: JobClient, jobId: string, wait: boolean): Promise<void> {
  if (!wait) {
    process.stdout.write(`${jobId}\n`);
    return;
  }
  const status = await client.waitForCompletion(jobId, { onProgress: progressPrinter(jobId) });
  printStatus(status);
  printCounters(status);
}

export function printCounters(s: JobStatus): void {
  for (const [k, v] of Object.entries(s.counters).sort()) if (v) process.stderr.write(`  ${k.padEnd(28)} ${v}\n`);
}

/**
 * The user's own stack of an error their code threw (`details.stack`: its first line and the user's
 * frames at their files and lines, see task/user-stack.ts), indented under the error's line.
 */
export function printUserStack(error: SerializedError | undefined, indent = '  '): void {
  const stack = error?.details?.stack;
  if (typeof stack !== 'string') return;
  for (const line of stack.split('\n')) process.stdout.write(`${indent}${escapeControlCharacters(line)}\n`);
}

/**
 * Rows under a header, each column as wide as its widest cell (the last column left free);
 * `below(i)` prints what goes under row i (an attempt's stack).
 */
export function printTable(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  below?: (row: number) => void,
): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${line(header)}\n`);
  rows.forEach((r, i) => {
    process.stdout.write(`${line(r)}\n`);
    below?.(i);
  });
}

/** `job list`: one row per job under a header. */
export function printJobTable(jobs: readonly JobStatus[]): void {
  printTable(
    ['JOB', 'NAME', 'USER', 'STATE', 'MAPS', 'REDUCES', 'TIME', 'OUTPUT'],
    jobs.map((s) => [
      s.jobId,
      escapeControlCharacters(s.name),
      s.user,
      s.state,
      `${s.mapsCompleted}/${s.mapsTotal}`,
      `${s.reducesCompleted}/${s.reducesTotal}`,
      jobDuration(s),
      escapeControlCharacters(s.outputPath),
    ]),
  );
}

/** `--json`: the value as one line of JSON on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** How the commands that run or show jobs (`local --example`, `submit`, `job`) print them. */
import type { SerializedError } from '../errors.js';
import type { JobStatus } from '../runtime/index.js';
import { escapeControlCharacters } from '../util/index.js';

/** Shows map/reduce progress: one updating line on a terminal, a line per change otherwise. */
export function progressPrinter(jobId: string): (s: JobStatus) => void {
  const tty = process.stderr.isTTY;
  let last = '';
  return (s) => {
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

export function printStatus(s: JobStatus): void {
  const secs = s.finishTime && s.startTime ? ((s.finishTime - s.startTime) / 1000).toFixed(2) : '-';
  process.stdout.write(
    `${s.jobId}  ${escapeControlCharacters(s.name)}  ${s.user} ` +
      ` ${s.state}  maps ${s.mapsCompleted}/${s.mapsTotal}  ` +
      `reduces ${s.reducesCompleted}/${s.reducesTotal}  ${secs}s  ` +
      `output ${s.outputPath}\n`,
  );
  if (s.error) process.stdout.write(`  error ${s.error.code}: ${s.error.message}\n`);
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

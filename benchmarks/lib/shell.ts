/** Timed shell commands for the peer tools, and small helpers shared by the benchmarks. */
import { execFileSync, spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';

export interface ShellOptions {
  /** Extra environment; LC_ALL=C is always set so that sort/uniq/grep compare bytes. */
  env?: Record<string, string>;
  cwd?: string;
}

/** Runs `command` with `bash -c` (pipefail on) and returns its wall time in seconds. */
export function timeShell(command: string, options: ShellOptions = {}): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const t0 = performance.now();
    const child = spawn('bash', ['-c', `set -o pipefail; ${command}`], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env, LC_ALL: 'C' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => {
      if (stderr.length < 4000) stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code === 0) resolvePromise(seconds);
      else reject(new Error(`\`${command}\` exited with ${code ?? signal}: ${stderr.trim()}`));
    });
  });
}

/** First line of `cmd --version` (or `-W version` for mawk), for the record. */
export function toolVersion(cmd: string, args: string[] = ['--version']): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
      .split('\n')[0]!
      .trim();
  } catch {
    return 'unknown';
  }
}

export function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Rounds for JSON: 3 decimals. */
export const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** Lines of a text, without the empty string after a final newline. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** A progress logger: each line stamped with the seconds since this call. */
export function progressLog(): (msg: string) => void {
  const t0 = performance.now();
  return (msg) => process.stdout.write(`[${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`);
}

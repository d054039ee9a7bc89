/**
 * The `minimr` command as a process (`node bin/minimr.js ...`), for the tests in test/cluster/: its
 * exit code, stdout and stderr, a non-zero exit being a result to check rather than a rejection.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** bin/minimr.js, from dist/test/helpers. */
export const MINIMR_BIN = fileURLToPath(new URL('../../../bin/minimr.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** The whole environment of the process; `cliEnv()` by default. */
  env?: NodeJS.ProcessEnv;
  /** Kill it (SIGTERM) after this long, ms: a command that should fail at once but waits. */
  timeoutMs?: number;
}

/** This process's environment with logs at `error` (so stderr holds what the command says), plus `extra`. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, MINIMR_LOG_LEVEL: 'error', ...extra };
}

/** Up to 64 MiB of output: `fs cat` of a test's data fits. */
const MAX_BUFFER = 64 << 20;

/** Runs `minimr ARGS` to its exit; its output as text. */
export async function runMinimr(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  try {
    const { stdout, stderr } = await execFileP(process.execPath, [MINIMR_BIN, ...args], {
      env: options.env ?? cliEnv(),
      maxBuffer: MAX_BUFFER,
      ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Runs `minimr ARGS` to its exit; stdout as bytes (for `fs cat` of binary data), stderr as text. */
export async function runMinimrBinary(
  args: readonly string[],
  options: CliOptions = {},
): Promise<{ code: number; stdout: Buffer; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileP(process.execPath, [MINIMR_BIN, ...args], {
      env: options.env ?? cliEnv(),
      encoding: 'buffer',
      maxBuffer: MAX_BUFFER,
    });
    return { code: 0, stdout, stderr: stderr.toString() };
  } catch (err) {
    const e = err as { code: number; stdout: Buffer; stderr: Buffer };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr.toString() };
  }
}

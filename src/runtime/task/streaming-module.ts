import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { MinimrError } from '../../errors.js';

/**
 * The engine's built-in streaming job module (apps/streaming/streaming-job.ts, compiled beside the
 * runtime): what runs every streaming job. The JobTracker puts its source in place of whatever module
 * a streaming submission carried, and a worker runs its own copy of it, never a fetched one: only
 * this code is given child processes (sandbox.ts).
 */
export const STREAMING_MODULE_FILE = fileURLToPath(
  new URL('../../../apps/streaming/streaming-job.js', import.meta.url),
);

/** The name streaming jobs' module is shown under. */
export const STREAMING_MODULE_NAME = 'minimr-streaming.js';

let source: Promise<string> | undefined;

/** The built-in streaming module's source (read once). */
export function streamingModuleSource(): Promise<string> {
  source ??= readFile(STREAMING_MODULE_FILE, 'utf8').catch((err: Error) => {
    source = undefined;
    throw new MinimrError(
      'EJOBMODULE',
      `the built-in streaming module ${STREAMING_MODULE_FILE} is missing (${err.message}): build the engine`,
    );
  });
  return source;
}

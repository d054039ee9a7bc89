import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * One logger factory so every process logs the same way on stderr (stdout is kept for command
 * output such as `fs cat` and job results): JSON lines, one per event, for files and collectors;
 * on a terminal, pino-pretty's readable lines (local time, level, message, fields), unless
 * MINIMR_LOG_FORMAT=json. MINIMR_LOG_LEVEL overrides the level.
 */
export function createLogger(name: string, level?: string): Logger {
  return pino(
    { name, level: level ?? process.env.MINIMR_LOG_LEVEL ?? 'info', base: { pid: process.pid } },
    logDestination(),
  );
}

function logDestination(): DestinationStream {
  const pretty = process.stderr.isTTY === true && process.env.MINIMR_LOG_FORMAT !== 'json';
  if (!pretty) return pino.destination({ fd: 2, sync: true });
  // Loaded only for a terminal: a daemon under systemd or a task process never pays for it.
  const prettyStream = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream;
  return prettyStream({
    destination: 2,
    sync: true,
    colorize: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
}

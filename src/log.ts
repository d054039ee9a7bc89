import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * One logger factory so every process logs the same way: JSON lines on stderr (stdout is kept for
 * command output such as `fs cat` and job results). MINIMR_LOG_LEVEL overrides the level.
 */
export function createLogger(name: string, level?: string): Logger {
  return pino(
    { name, level: level ?? process.env.MINIMR_LOG_LEVEL ?? 'info', base: { pid: process.pid } },
    pino.destination({ fd: 2, sync: true }),
  );
}

/**
 * The JobTracker's audit log, as HDFS's (FSNamesystem.audit): one JSON line per client operation
 * that names a path or a job, saying who asked, from where, what, on which path or job, and how it
 * ended. It is fed by the one dispatcher (wire/dispatch.ts `observe`), so every row of the client
 * table is covered by the same code; the rows' schemas say which arguments are paths.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { MinimrError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { CallRecord, TSchema } from '../wire/index.js';

/** One line of the audit log. */
export interface AuditEntry {
  /** ISO 8601, UTC. */
  readonly time: string;
  /** The user the connection authenticated as (or the web's signed-in user). */
  readonly user: string;
  /** The client's IP address; empty when unknown. */
  readonly address: string;
  /** The protocol operation (`fs-mkdir`, `submit-job`, `kill-job`...). */
  readonly operation: string;
  /** The first path argument; with several (a rename, a job's inputs and output), `paths` has them all. */
  readonly path?: string;
  readonly paths?: readonly string[];
  /** The job the operation names, or the one it made (submit-job). */
  readonly jobId?: string;
  readonly attemptId?: string;
  /** `allowed` when it succeeded, `denied` when refused for who asked (EPERM, EAUTH), else the error's code. */
  readonly result: string;
}

const PATH_CODE_KEYWORD = 'x-minimr-error-code';

/**
 * Operations whose allowed calls are not written, as HDFS's dfs.namenode.audit.log.debug.cmdlist:
 * `job-status` is polled several times a second by every progress display (`minimr submit`), and a
 * line per poll would bury the rest. Refused or failed ones are still written.
 */
export const QUIET_WHEN_ALLOWED: ReadonlySet<string> = new Set(['job-status']);

/** The values of `args` that the row's schema declares paths (EBADPATH), in the schema's order, two levels deep. */
function pathsIn(schema: TSchema, value: unknown, depth = 0): string[] {
  if (value === undefined || value === null) return [];
  if (schema[PATH_CODE_KEYWORD] === 'EBADPATH' && schema.type === 'string')
    return typeof value === 'string' ? [value] : [];
  if (schema.type === 'array' && schema.items && Array.isArray(value))
    return value.flatMap((v) => pathsIn(schema.items as TSchema, v, depth));
  if (schema.type === 'object' && schema.properties && typeof value === 'object' && depth < 2) {
    const record = value as Record<string, unknown>;
    return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([key, s]) =>
      pathsIn(s, record[key], depth + 1),
    );
  }
  return [];
}

function stringField(value: unknown, field: string): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = (value as Record<string, unknown>)[field];
  return typeof v === 'string' ? v : undefined;
}

/** The audit line of a call, or undefined when it names no path and no job. */
export function auditEntryOf(record: CallRecord<unknown>, address: string, now: Date): AuditEntry | undefined {
  const paths = pathsIn(record.op.args, record.args);
  const jobId =
    stringField(record.args, 'jobId') ?? (record.outcome.ok ? stringField(record.outcome.result, 'jobId') : undefined);
  const attemptId = stringField(record.args, 'attemptId');
  if (paths.length === 0 && jobId === undefined && attemptId === undefined) return undefined;
  if (record.outcome.ok && QUIET_WHEN_ALLOWED.has(record.operation)) return undefined;
  const error = record.outcome.ok ? undefined : record.outcome.error;
  const code = error === undefined ? undefined : error instanceof MinimrError ? error.code : 'EINTERNAL';
  return {
    time: now.toISOString(),
    user: record.caller.user,
    address,
    operation: record.operation,
    ...(paths.length > 0 ? { path: paths[0] } : {}),
    ...(paths.length > 1 ? { paths } : {}),
    ...(jobId !== undefined ? { jobId } : {}),
    ...(attemptId !== undefined ? { attemptId } : {}),
    result: code === undefined ? 'allowed' : code === 'EPERM' || code === 'EAUTH' ? 'denied' : code,
  };
}

/** Appends audit lines to a file (mode 0600: it names every user's paths). */
export class AuditLog {
  private readonly stream: WriteStream;
  private failed = false;

  constructor(
    readonly file: string,
    private readonly logger: Logger,
  ) {
    try {
      mkdirSync(dirname(file), { recursive: true });
    } catch (err) {
      throw new MinimrError(
        'EBADCONF',
        `cannot make the directory of the audit log ${file} (${(err as NodeJS.ErrnoException).code ?? err}); ` +
          `give another with --audit-log FILE, or --audit-log none`,
        { file },
      );
    }
    this.stream = createWriteStream(file, { flags: 'a', mode: 0o600 });
    this.stream.on('error', (err) => {
      // The audit must not stop the cluster: say so once, loudly.
      if (!this.failed) this.logger.error({ err: err.message, file }, 'cannot write the audit log');
      this.failed = true;
    });
  }

  record(entry: AuditEntry): void {
    if (!this.failed) this.stream.write(`${JSON.stringify(entry)}\n`);
  }

  /** Writes what is buffered and closes the file. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.stream.closed || this.stream.destroyed) return resolve();
      this.stream.end(() => resolve());
    });
  }
}

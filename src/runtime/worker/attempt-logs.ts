/**
 * Per-attempt logs: what an attempt's task code writes to stdout and stderr (console.log, a stack
 * trace, a warning of Node's) goes to two files on its worker, `LOGS/JOB/ATTEMPT/stdout` and
 * `.../stderr`, instead of the worker's own log, as Hadoop's userlogs do.
 *
 * A task process runs one attempt at a time but several in its life (pre-started spares, warm
 * reuse), so its stdout and stderr are pipes the worker reads, and the worker sends each chunk to
 * the log of the attempt the process was last given. Output of a process that has run no attempt
 * yet (start-up warnings) goes to the worker's own stdout/stderr, as before. Output that arrives
 * after an attempt's end (a pipe read after the IPC `done`) still reaches that attempt's files,
 * since the process keeps its sink until it is given the next attempt. The worker's own lines on how
 * an attempt ended come last, after all its process wrote (`AttemptLog.end`).
 *
 * Bounds: each stream of an attempt keeps at most `maxBytes` on disk (a runaway task must not fill
 * the worker's disk); what is beyond is counted and the file ends with a line that says how much
 * was dropped. A job's log directory is removed at start and every hour once the retention has
 * passed since its last attempt here started (the directory's mtime).
 * Reads are served by the worker's data port (`/logs/JOB/ATTEMPT/STREAM?offset=&length=`) at most
 * MAX_LOG_READ_BYTES at a time, by default the tail; the JobTracker relays them to
 * `minimr job logs` and the web UI, since only it knows which worker ran an attempt.
 */
import type { ChildProcess } from 'node:child_process';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { MinimrError, deserializeError } from '../../errors.js';
import { BLOCK_TOKEN_HEADER, dataPortRequest, type BlockTokenKey } from '../../storage/index.js';
import {
  ATTEMPT_LOG_STREAMS,
  DEFAULT_LOG_READ_BYTES,
  MAX_LOG_READ_BYTES,
  isAttemptLogStream,
  type AttemptLogSlice,
  type AttemptLogStream,
} from '../wire/index.js';

/** Bytes kept on disk per stream of an attempt, by default. */
export const DEFAULT_ATTEMPT_LOG_MAX_BYTES = 16 * 1024 * 1024;
export const DEFAULT_LOG_RETAIN_HOURS = 24;

/** Job and attempt ids as the JobTracker makes them; anything else never reaches the file system. */
const ID = /^[A-Za-z0-9_.:-]{1,200}$/;

export function attemptLogDir(logRoot: string, jobId: string, attemptId: string): string {
  if (!ID.test(jobId) || !ID.test(attemptId))
    throw new MinimrError(
      'EBADREQUEST',
      `not a job or attempt id: ${JSON.stringify(jobId)}, ${JSON.stringify(attemptId)}`,
    );
  return join(logRoot, jobId, attemptId);
}

/** The two files of one attempt, each written up to its cap. */
export class AttemptLog {
  private readonly files: Record<AttemptLogStream, { out: WriteStream; written: number; dropped: number }>;
  private closed = false;
  /** A task process writes here (TaskOutputRouter.assign) and has not written its last yet. */
  private processWriting = false;
  /** Set once the attempt ended (`end`): the worker's lines still to write after its process's last. */
  private closingLines: readonly string[] | undefined;

  private constructor(
    dir: string,
    private readonly maxBytes: number,
  ) {
    const open = (stream: AttemptLogStream) => ({
      out: createWriteStream(join(dir, stream), { flags: 'a' }),
      written: 0,
      dropped: 0,
    });
    this.files = { stdout: open('stdout'), stderr: open('stderr') };
    for (const f of Object.values(this.files)) f.out.on('error', () => undefined);
  }

  static async open(
    logRoot: string,
    jobId: string,
    attemptId: string,
    maxBytes = DEFAULT_ATTEMPT_LOG_MAX_BYTES,
  ): Promise<AttemptLog> {
    const dir = attemptLogDir(logRoot, jobId, attemptId);
    await mkdir(dir, { recursive: true });
    return new AttemptLog(dir, maxBytes);
  }

  write(stream: AttemptLogStream, chunk: Buffer | string): void {
    if (this.closed) return;
    const f = this.files[stream];
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const room = Math.max(0, this.maxBytes - f.written);
    if (bytes.length <= room) {
      f.out.write(bytes);
      f.written += bytes.length;
      return;
    }
    if (room > 0) f.out.write(bytes.subarray(0, room));
    f.written += room;
    f.dropped += bytes.length - room;
  }

  /** A line of the worker's own about the attempt (how it ended), on its stderr file. */
  note(line: string): void {
    if (this.closed) return;
    this.files.stderr.out.write(`[minimr] ${line}\n`);
  }

  /**
   * The attempt is over: `lines` of the worker's own (how it ended; none for a success) end its stderr
   * file, and the log is closed. While a task process still writes here they wait for its last
   * output (`processOutputOver`): a killed process's pipes may deliver its last lines after the
   * worker learnt it exited, and those come before the worker's verdict on them.
   */
  end(lines: readonly string[] = []): void {
    if (this.closingLines !== undefined) return;
    this.closingLines = lines;
    if (!this.processWriting) void this.closeWithLines();
  }

  /** From now on a task process's output comes here (TaskOutputRouter.assign): `end` waits for its last. */
  processOutputBegins(): void {
    this.processWriting = true;
  }

  /** The process wrote its last here: it exited and its pipes ended, or it runs another attempt now. */
  processOutputOver(): void {
    this.processWriting = false;
    if (this.closingLines !== undefined) void this.closeWithLines();
  }

  private closeWithLines(): Promise<void> {
    for (const line of this.closingLines ?? []) this.note(line);
    return this.close();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      ATTEMPT_LOG_STREAMS.map((stream) => {
        const f = this.files[stream];
        if (f.dropped > 0)
          f.out.write(
            `\n[minimr] ${f.dropped} more bytes of ${stream} dropped: an ` +
              `attempt keeps at most ${this.maxBytes} bytes of each stream\n`,
          );
        return new Promise<void>((resolve) => f.out.end(() => resolve()));
      }),
    );
  }
}

/**
 * How long a task process's pipes may stay open after it exited before its output is taken as
 * over: a process it started that outlived it (a streaming command) may hold them, and its
 * attempt's log must still get the worker's last lines and be closed.
 */
export const PIPES_END_AFTER_EXIT_MS = 5_000;

/**
 * Routes a task process's stdout and stderr to the log of the attempt it runs (see the top of the
 * file). The process must have been forked with `stdio: ['ignore', 'pipe', 'pipe', 'ipc']`.
 */
export class TaskOutputRouter {
  private readonly sinks = new WeakMap<ChildProcess, AttemptLog>();
  /** Processes that exited and whose pipes ended: they write nothing more. */
  private readonly silent = new WeakSet<ChildProcess>();

  attach(child: ChildProcess): void {
    const route = (stream: AttemptLogStream, fallback: NodeJS.WriteStream) => (chunk: Buffer) => {
      const log = this.sinks.get(child);
      if (log) log.write(stream, chunk);
      else fallback.write(chunk);
    };
    child.stdout?.on('data', route('stdout', process.stdout));
    child.stderr?.on('data', route('stderr', process.stderr));
    const pipes = [child.stdout, child.stderr].filter((s) => s !== null);
    let openPipes = pipes.length;
    let exited = false;
    let giveUp: NodeJS.Timeout | undefined;
    // Its output is over once it exited and both pipes ended (they may end before or after the exit:
    // killed, they usually end first).
    const maybeOver = (): void => {
      if (this.silent.has(child) || !exited || openPipes > 0) return;
      this.silent.add(child);
      clearTimeout(giveUp);
      this.sinks.get(child)?.processOutputOver();
    };
    for (const s of pipes) {
      // 'close', not 'end': it also comes after a pipe's error, where 'end' never would.
      s.once('close', () => {
        openPipes--;
        maybeOver();
      });
    }
    child.once('exit', () => {
      exited = true;
      maybeOver();
      if (!this.silent.has(child)) {
        giveUp = setTimeout(() => {
          for (const s of pipes) s.destroy();
          openPipes = 0;
          maybeOver();
        }, PIPES_END_AFTER_EXIT_MS);
        giveUp.unref();
      }
    });
  }

  /** From now on the process's output is the attempt's; the previous attempt's log gets no more of it. */
  assign(child: ChildProcess, log: AttemptLog): void {
    const previous = this.sinks.get(child);
    this.sinks.set(child, log);
    // A process that died meanwhile writes nothing: the log must not wait for it.
    if (!this.silent.has(child)) log.processOutputBegins();
    if (previous && previous !== log) previous.processOutputOver();
  }
}

/** Removes job log directories whose last attempt started (their mtime) more than `retainHours` ago. */
export async function pruneAttemptLogs(logRoot: string, retainHours: number, now = Date.now()): Promise<number> {
  let removed = 0;
  let jobs: string[];
  try {
    jobs = await readdir(logRoot);
  } catch {
    return 0;
  }
  for (const job of jobs) {
    const dir = join(logRoot, job);
    try {
      const s = await stat(dir);
      if (now - s.mtimeMs > retainHours * 3600_000) {
        await rm(dir, { recursive: true, force: true });
        removed++;
      }
    } catch {
      // gone meanwhile
    }
  }
  return removed;
}

/** Checks a requested byte range: offset (default: the tail) and length, at most MAX_LOG_READ_BYTES. */
export function logReadRange(
  size: number,
  offset: number | undefined,
  length: number | undefined,
): { start: number; end: number } {
  const want = length ?? DEFAULT_LOG_READ_BYTES;
  if (!Number.isInteger(want) || want < 0 || want > MAX_LOG_READ_BYTES) {
    throw new MinimrError('EBADREQUEST', `a log read takes a length of 0..${MAX_LOG_READ_BYTES} bytes, got ${length}`);
  }
  if (offset !== undefined && (!Number.isInteger(offset) || offset < 0))
    throw new MinimrError('EBADREQUEST', `a log offset is a non-negative integer, got ${offset}`);
  const start = offset === undefined ? Math.max(0, size - want) : Math.min(offset, size);
  return { start, end: Math.min(size, start + want) };
}

function optionalInt(raw: string | null): number | undefined {
  if (raw === null || raw === '') return undefined;
  return /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
}

/**
 * Serves `GET /logs/JOB/ATTEMPT/STREAM[?offset=N][&length=N]` from `logRoot`: the bytes as
 * text/plain, the file's size in `x-minimr-log-size` and where they start in `x-minimr-log-offset`.
 * Returns false for other paths, so it can be chained with the worker's other handlers.
 */
export function createAttemptLogRequestHandler(
  logRoot: string,
  access: { readonly blockKey: () => BlockTokenKey | undefined; readonly now?: () => number },
): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://worker');
    const m = /^\/logs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (!m) return false;
    const fail = (status: number, code: string, message: string): true => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ code, message }));
      return true;
    };
    const [, jobId, attemptId, stream] = m as unknown as [string, string, string, string];
    if (req.method !== 'GET') return fail(405, 'EBADREQUEST', 'logs are read with GET');
    if (!isAttemptLogStream(stream)) return fail(400, 'EBADREQUEST', `a log stream is stdout or stderr, got ${stream}`);
    // A task's output may hold its job's data: only the JobTracker, which checked the reader owns the job, has a token.
    const key = access.blockKey();
    const header = req.headers[BLOCK_TOKEN_HEADER];
    try {
      if (!key) throw new MinimrError('ETOKEN', 'this worker has not registered yet: it serves no logs');
      key.verify(
        typeof header === 'string' ? header : undefined,
        attemptLogTokenId(decodeURIComponent(jobId), decodeURIComponent(attemptId)),
        'read',
        (access.now ?? Date.now)(),
      );
    } catch (err) {
      const e = err as MinimrError;
      return fail(403, e.code ?? 'ETOKEN', e.message);
    }
    void (async () => {
      try {
        const file = join(attemptLogDir(logRoot, decodeURIComponent(jobId), decodeURIComponent(attemptId)), stream);
        let size: number;
        try {
          size = (await stat(file)).size;
        } catch {
          return fail(
            404,
            'ENOENT',
            `this worker has no ${stream} log of attempt ${attemptId} ` +
              `(removed after the retention time, or never started here)`,
          );
        }
        const { start, end } = logReadRange(
          size,
          optionalInt(url.searchParams.get('offset')),
          optionalInt(url.searchParams.get('length')),
        );
        res.writeHead(200, {
          'content-type': 'text/plain; charset=utf-8',
          'x-minimr-log-size': String(size),
          'x-minimr-log-offset': String(start),
        });
        if (end <= start) return res.end();
        createReadStream(file, { start, end: end - 1 })
          .on('error', () => res.destroy())
          .pipe(res);
      } catch (err) {
        if (err instanceof MinimrError) fail(400, err.code, err.message);
        else fail(500, 'EIO', (err as Error).message);
      }
    })();
    return true;
  };
}

/** Reads a slice of an attempt's log from the worker that ran it (`dataUrl`: `http://HOST:PORT`). */
/** What a log token names: the attempt's log, not any block (the same key signs both). */
export function attemptLogTokenId(jobId: string, attemptId: string): string {
  return `attempt-log/${jobId}/${attemptId}`;
}

export async function fetchAttemptLog(
  dataUrl: string,
  where: { jobId: string; attemptId: string; workerId: string },
  stream: AttemptLogStream,
  token: string,
  offset?: number,
  length?: number,
): Promise<AttemptLogSlice> {
  const query = new URLSearchParams();
  if (offset !== undefined) query.set('offset', String(offset));
  if (length !== undefined) query.set('length', String(length));
  const path = `/logs/${encodeURIComponent(where.jobId)}/${encodeURIComponent(where.attemptId)}/${stream}?${query}`;
  const { hostname, port } = new URL(dataUrl);
  let res: { status: number; headers: IncomingMessage['headers']; body: Buffer };
  try {
    // Over HTTPS trusting only the cluster's authority when the cluster is TLS (storage's data-port transport).
    res = await new Promise((resolve, reject) => {
      const req = dataPortRequest(
        { host: hostname.replace(/^\[|\]$/g, ''), port: Number(port), path, headers: { [BLOCK_TOKEN_HEADER]: token } },
        (r) => {
          const parts: Buffer[] = [];
          r.on('data', (c: Buffer) => parts.push(c));
          r.once('end', () => resolve({ status: r.statusCode ?? 0, headers: r.headers, body: Buffer.concat(parts) }));
          r.once('error', reject);
        },
      );
      req.setTimeout(15_000, () => req.destroy(new Error('no answer within 15 s')));
      req.once('error', reject);
      req.end();
    });
  } catch (err) {
    throw new MinimrError(
      'EFETCH',
      `cannot read the log of ${where.attemptId} from worker ${where.workerId} (${dataUrl}): ${(err as Error).message}`,
    );
  }
  if (res.status < 200 || res.status >= 300) {
    let body: { code?: string; message?: string } = {};
    try {
      body = JSON.parse(res.body.toString('utf8')) as typeof body;
    } catch {
      // not JSON: the status says it
    }
    throw deserializeError({
      code: body.code ?? 'EFETCH',
      message: `worker ${where.workerId}: ${body.message ?? `HTTP ${res.status}`}`,
    });
  }
  const header = (name: string): string | undefined => {
    const v = res.headers[name];
    return typeof v === 'string' ? v : undefined;
  };
  const bytes = res.body;
  return {
    attemptId: where.attemptId,
    workerId: where.workerId,
    stream,
    size: Number(header('x-minimr-log-size') ?? bytes.length),
    offset: Number(header('x-minimr-log-offset') ?? 0),
    text: bytes.toString('utf8'),
  };
}

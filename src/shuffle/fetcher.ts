import { Agent, get, type IncomingMessage } from 'node:http';
import { open, type FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { crc32 } from 'node:zlib';
import { isMinimrError, MinimrError } from '../errors.js';
import { readIndexFile } from './index-file.js';
import { assertValidShuffleId, mapOutputPaths } from './paths.js';
import { HEADER_CRC32, HEADER_LENGTH, HEADER_RECORDS, shuffleUrlPath } from './shuffle-handler.js';
import type { FetchedSegment, FetchMapOutputsOptions, MapOutputLocation, PartitionIndexEntry } from './types.js';

/**
 * Fetcher: gets one reduce partition from every map output, `concurrency` at a time, over HTTP from
 * the map's worker or straight from disk when the map ran on this worker. Every segment is checked
 * against its crc32. A failed try (connection error, 5xx, short body, checksum mismatch, timeout) is
 * retried with doubling backoff; a 4xx (output missing, bad request) is not, as asking again gets the
 * same answer. When one map output cannot be had, the whole call rejects with EFETCH naming that map
 * — the analogue of Spark's FetchFailedException: the JobTracker re-runs the map, and the reduce
 * attempt is retried later, so fetching the remaining outputs would be wasted work.
 *
 * First version: segments are held in memory; the external-sort issue makes big ones go to disk.
 */

const DEFAULT_CONCURRENCY = 5;
const DEFAULT_RETRIES = 3;
const DEFAULT_BACKOFF_MS = 200;
const DEFAULT_TIMEOUT_MS = 30_000;
/** An error body is a short JSON; a longer one is not read further. */
const MAX_ERROR_BODY = 64 * 1024;

/** One failed try; `retriable` says whether trying again could help. */
class FetchTryError extends Error {
  readonly retriable: boolean;
  readonly status: number | undefined;
  constructor(message: string, retriable: boolean, status?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FetchTryError';
    this.retriable = retriable;
    this.status = status;
  }
}

export async function fetchMapOutputs(options: FetchMapOutputsOptions): Promise<FetchedSegment[]> {
  const { jobId, reduceIndex, locations, local, counters } = options;
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  const retries = options.retries ?? DEFAULT_RETRIES;
  const backoffMs = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  assertValidShuffleId(jobId, 'jobId');
  for (const loc of locations) assertValidShuffleId(loc.attemptId, 'attemptId');
  if (!Number.isInteger(reduceIndex) || reduceIndex < 0) {
    throw new MinimrError('EINTERNAL', `invalid reduceIndex ${reduceIndex}`, { jobId, reduceIndex });
  }
  if (!Number.isInteger(concurrency) || concurrency < 1 || !Number.isInteger(retries) || retries < 0 || backoffMs < 0) {
    throw new MinimrError('EINTERNAL', 'fetch options out of range', { jobId, concurrency, retries, backoffMs });
  }
  if (options.signal?.aborted) throw killed(jobId, reduceIndex);

  // One controller stops everything: the caller's signal, or the first map output that cannot be had.
  const stop = new AbortController();
  const onCallerAbort = (): void => stop.abort();
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const results: FetchedSegment[] = new Array<FetchedSegment>(locations.length);
  let firstError: unknown;
  let next = 0;

  const fetchOne = async (loc: MapOutputLocation): Promise<FetchedSegment> => {
    const isLocal = local !== undefined && loc.workerId === local.workerId;
    let lastError: unknown;
    let tries = 0;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (stop.signal.aborted) break;
      tries++;
      try {
        const segment = isLocal
          ? await readLocal(local.rootDir, jobId, loc, reduceIndex)
          : await fetchRemote(agent, jobId, loc, reduceIndex, timeoutMs, stop.signal);
        if (counters) {
          if (isLocal) counters.shuffleBytesLocal += segment.data.length;
          else counters.shuffleBytesRemote += segment.data.length;
        }
        return segment;
      } catch (err) {
        lastError = err;
        if (!(err instanceof FetchTryError) || !err.retriable || attempt === retries) break;
        await sleep(backoffMs * 2 ** attempt, undefined, { signal: stop.signal }).catch(() => undefined);
      }
    }
    if (options.signal?.aborted) throw killed(jobId, reduceIndex);
    throw fetchFailed(jobId, reduceIndex, loc, isLocal, tries, lastError);
  };

  const worker = async (): Promise<void> => {
    while (!stop.signal.aborted && next < locations.length) {
      const i = next++;
      try {
        results[i] = await fetchOne(locations[i]!);
      } catch (err) {
        firstError ??= err;
        stop.abort();
      }
    }
  };

  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, locations.length) }, worker));
  } finally {
    options.signal?.removeEventListener('abort', onCallerAbort);
    agent.destroy();
  }
  if (options.signal?.aborted) throw killed(jobId, reduceIndex);
  if (firstError !== undefined) throw firstError;
  // Map order, whatever order the locations came in: the merge breaks key ties by run order, so the
  // order of equal keys' values in the reduce is the same on every run.
  return results.map((s, i) => ({ s, i })).sort((a, b) => a.s.mapIndex - b.s.mapIndex || a.i - b.i).map(({ s }) => s);
}

function killed(jobId: string, reduceIndex: number): MinimrError {
  return new MinimrError('EKILLED', `shuffle fetch of reduce ${reduceIndex} of job ${jobId} was cancelled`, { jobId, reduceIndex });
}

function fetchFailed(
  jobId: string,
  reduceIndex: number,
  loc: MapOutputLocation,
  isLocal: boolean,
  tries: number,
  cause: unknown,
): MinimrError {
  const why = cause instanceof Error ? cause.message : String(cause);
  const where = isLocal ? 'local disk' : `worker ${loc.workerId} (${loc.host}:${loc.dataPort})`;
  return new MinimrError(
    'EFETCH',
    `cannot fetch output of map ${loc.mapIndex} (attempt ${loc.attemptId}) for reduce ${reduceIndex} of job ${jobId} ` +
      `from ${where} after ${tries} ${tries === 1 ? 'try' : 'tries'}: ${why}; the map will be re-run and this reduce retried`,
    {
      jobId,
      mapIndex: loc.mapIndex,
      attemptId: loc.attemptId,
      reduceIndex,
      workerId: loc.workerId,
      host: loc.host,
      dataPort: loc.dataPort,
      tries,
      status: cause instanceof FetchTryError ? cause.status : undefined,
    },
    { cause },
  );
}

function verify(data: Buffer, expectedCrc: number, where: string): void {
  const actual = crc32(data);
  if (actual !== expectedCrc) {
    throw new FetchTryError(`crc32 mismatch in segment from ${where}: expected ${expectedCrc}, got ${actual}`, true);
  }
}

async function readLocal(rootDir: string, jobId: string, loc: MapOutputLocation, reduceIndex: number): Promise<FetchedSegment> {
  const paths = mapOutputPaths(rootDir, jobId, loc.attemptId);
  let partitions: readonly PartitionIndexEntry[];
  try {
    ({ partitions } = await readIndexFile(paths.indexFile));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new FetchTryError(`map output index ${paths.indexFile} is missing`, false, undefined, { cause: err });
    if (isMinimrError(err, 'ECHECKSUM')) throw new FetchTryError(err.message, true, undefined, { cause: err });
    throw new FetchTryError(`cannot read ${paths.indexFile}: ${(err as Error).message}`, true, undefined, { cause: err });
  }
  const entry = partitions[reduceIndex];
  if (!entry) throw new FetchTryError(`partition ${reduceIndex} out of range: map output has ${partitions.length} partitions`, false);
  const data = Buffer.allocUnsafe(entry.length);
  let fh: FileHandle;
  try {
    fh = await open(paths.dataFile, 'r');
  } catch (err) {
    throw new FetchTryError(`cannot open ${paths.dataFile}: ${(err as Error).message}`, (err as NodeJS.ErrnoException).code !== 'ENOENT', undefined, { cause: err });
  }
  try {
    let got = 0;
    while (got < entry.length) {
      const { bytesRead } = await fh.read(data, got, entry.length - got, entry.offset + got);
      if (bytesRead === 0) throw new FetchTryError(`${paths.dataFile} is truncated`, true);
      got += bytesRead;
    }
  } finally {
    await fh.close();
  }
  verify(data, entry.crc32, paths.dataFile);
  return { mapIndex: loc.mapIndex, attemptId: loc.attemptId, workerId: loc.workerId, records: entry.records, crc32: entry.crc32, data, local: true };
}

function headerNumber(res: IncomingMessage, name: string): number | undefined {
  const raw = res.headers[name];
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}

function fetchRemote(
  agent: Agent,
  jobId: string,
  loc: MapOutputLocation,
  reduceIndex: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<FetchedSegment> {
  const where = `${loc.host}:${loc.dataPort}`;
  return new Promise<FetchedSegment>((resolve, reject) => {
    let settled = false;
    const fail = (err: FetchTryError): void => {
      if (settled) return;
      settled = true;
      req.destroy();
      reject(err);
    };
    const req = get(
      { host: loc.host, port: loc.dataPort, path: shuffleUrlPath(jobId, loc.attemptId, reduceIndex), agent, signal, timeout: timeoutMs },
      (res) => {
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          readErrorBody(res, (body) => {
            const retriable = !(status >= 400 && status < 500);
            fail(new FetchTryError(`HTTP ${status} from ${where}${body ? `: ${body}` : ''}`, retriable, status));
          });
          return;
        }
        const length = headerNumber(res, HEADER_LENGTH);
        const records = headerNumber(res, HEADER_RECORDS);
        const expectedCrc = headerNumber(res, HEADER_CRC32);
        if (length === undefined || records === undefined || expectedCrc === undefined) {
          fail(new FetchTryError(`response from ${where} lacks the segment headers`, true, status));
          return;
        }
        // Sized from the header up front: one copy of the segment, never a concat of all chunks.
        const data = Buffer.allocUnsafe(length);
        let got = 0;
        res.on('data', (chunk: Buffer) => {
          if (got + chunk.length > length) {
            fail(new FetchTryError(`response from ${where} is longer than its ${length}-byte header`, true, status));
            return;
          }
          chunk.copy(data, got);
          got += chunk.length;
        });
        res.on('end', () => {
          if (settled) return;
          if (got !== length) {
            fail(new FetchTryError(`short segment from ${where}: ${got} of ${length} bytes`, true, status));
            return;
          }
          try {
            verify(data, expectedCrc, where);
          } catch (err) {
            fail(err as FetchTryError);
            return;
          }
          settled = true;
          resolve({ mapIndex: loc.mapIndex, attemptId: loc.attemptId, workerId: loc.workerId, records, crc32: expectedCrc, data, local: false });
        });
        res.on('error', (err) => fail(new FetchTryError(`reading from ${where}: ${err.message}`, true, status, { cause: err })));
        res.on('close', () => {
          if (!res.complete) fail(new FetchTryError(`connection to ${where} closed mid-segment`, true, status));
        });
      },
    );
    req.on('timeout', () => fail(new FetchTryError(`no data from ${where} for ${timeoutMs} ms`, true)));
    req.on('error', (err) => fail(new FetchTryError(`cannot fetch from ${where}: ${err.message}`, true, undefined, { cause: err })));
  });
}

function readErrorBody(res: IncomingMessage, done: (message: string) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (): void => {
    if (finished) return;
    finished = true;
    const text = Buffer.concat(chunks).toString('utf8');
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && 'message' in parsed && typeof parsed.message === 'string') {
        done(parsed.message);
        return;
      }
    } catch {
      // not JSON: fall back to the raw text
    }
    done(text.slice(0, 500));
  };
  res.on('data', (chunk: Buffer) => {
    if (size < MAX_ERROR_BODY) chunks.push(chunk);
    size += chunk.length;
  });
  res.on('end', finish);
  res.on('close', finish);
  res.on('error', finish);
}

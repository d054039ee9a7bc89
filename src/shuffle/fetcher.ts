import type { Agent, ClientRequest, IncomingMessage } from 'node:http';
import { open, type FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { crc32 } from 'node:zlib';
import { isMinimrError, MinimrError } from '../errors.js';
import { dataPortRequest, newDataPortAgent } from '../storage/index.js';
import { noteTransientBytes } from './gc-pacer.js';
import { readIndexFile, readRuns, runsEnd, runTotals } from './index-file.js';
import { MapOutputDirectory } from './map-output-directory.js';
import { assertValidShuffleId, mapOutputPaths } from './paths.js';
import {
  HEADER_LENGTH,
  HEADER_RAW_LENGTH,
  HEADER_RECORDS,
  HEADER_RUNS,
  parseRunsHeader,
  shuffleUrlPath,
} from './shuffle-handler.js';
import {
  sameHash,
  SHUFFLE_HASH_HEADER,
  SHUFFLE_REPLY_HEADER,
  shuffleReplyHash,
  shuffleRequestHash,
} from './shuffle-secret.js';
import type {
  FetchedSegment,
  FetchMapOutputsOptions,
  MapOutputLocation,
  PartitionIndexEntry,
  SegmentRun,
} from './types.js';

/**
 * Fetcher: gets one reduce partition from every map output, `concurrency` at a time, over HTTP from
 * the map's worker or straight from disk when the map ran on this worker. The segment's stored bytes
 * (checksummed, compressed frames) are streamed into a `SegmentSink` that the caller opens once the
 * segment's size is known: the reduce side's MergeManager decides there whether the segment is
 * decompressed into memory or written to disk as it is, and makes the fetch wait when memory is short.
 *
 * A segment is one sorted run of the map's records for the partition, or two (MAX_MAP_OUTPUT_RUNS),
 * fetched together: a sink sees them all or none. Every run is checked against its crc32 (of its
 * stored bytes, computed as they stream). A failed
 * try (connection error, 5xx, short body, checksum mismatch, corrupt frame, timeout) is retried with
 * doubling backoff; a 4xx (output missing, bad request) is not, as asking again gets the same answer.
 * When one map output cannot be had, the whole call rejects with EFETCH naming that map — the analogue
 * of Spark's FetchFailedException: the JobTracker re-runs the map, and the reduce attempt is retried
 * later, so fetching the remaining outputs would be wasted work. An error of the sink that is not
 * about the data (local disk full, shuffle stopped) is this reducer's own and is rethrown as is.
 */

const DEFAULT_CONCURRENCY = 5;
const DEFAULT_RETRIES = 3;
const DEFAULT_BACKOFF_MS = 200;
const DEFAULT_TIMEOUT_MS = 30_000;
/** An error body is a short JSON; a longer one is not read further. */
const MAX_ERROR_BODY = 64 * 1024;
/** Read size of the local short-circuit. */
const LOCAL_CHUNK = 256 * 1024;

/** What a reducer learns of a segment before its bytes: from the index (local) or the headers (HTTP). */
export interface SegmentHeader {
  /** Stored bytes (frames, headers included), all runs. */
  readonly length: number;
  /** Bytes of the records once decompressed, all runs. */
  readonly rawLength: number;
  readonly records: number;
  /** The sorted runs, in order: their stored bytes come one after the other. */
  readonly runs: readonly SegmentRun[];
  readonly local: boolean;
  /**
   * Where the stored bytes lie on this machine (a local map output): the data file and each run's
   * offset in it. A sink may read them there later instead of keeping a copy; the fetcher still
   * streams the bytes through `write` first, so their CRCs are checked before `finish`.
   */
  readonly file?: { readonly path: string; readonly runOffsets: readonly number[] };
}

/**
 * Receives one try's stored bytes, in order. `write` may return a promise (the stream waits for it);
 * a chunk is not used by the fetcher after `write` (or its promise) returns. After the last chunk the
 * fetcher checks length and each run's crc32, then calls `finish`; on any failure it calls `abort` instead.
 * A MinimrError ECHECKSUM/EPROTOCOL thrown by `write`/`finish` is a bad segment (retried); any other
 * error is the reducer's own and fails the call as it is.
 */
export interface SegmentSink {
  /** `chunk` is the caller's again once this returns (or resolves): a sink copies what it keeps. */
  write(chunk: Buffer): void | Promise<void>;
  finish(): void | Promise<void>;
  abort(): void | Promise<void>;
}

/** Opens the sink of one try; may wait (memory backpressure). Must give up when `signal` aborts. */
export type OpenSegmentSink = (
  loc: MapOutputLocation,
  header: SegmentHeader,
  signal: AbortSignal,
) => Promise<SegmentSink>;

export interface FetchAllOptions extends Omit<FetchMapOutputsOptions, 'locations'> {
  /** Every map output, known before the fetch starts; or: */
  readonly locations?: readonly MapOutputLocation[];
  /** Map outputs as the reduce learns them (reduce slow start; see map-output-directory.ts). */
  readonly directory?: MapOutputDirectory;
  readonly openSink: OpenSegmentSink;
  /** Called when a location's segment is complete (after `finish`), in completion order. */
  readonly onFetched?: (loc: MapOutputLocation, header: SegmentHeader) => void;
}

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

/** An error out of the sink: a bad segment becomes a retriable try error, anything else stays fatal. */
function sinkError(err: unknown, where: string): unknown {
  if (err instanceof FetchTryError) return err;
  if (isMinimrError(err, 'ECHECKSUM') || isMinimrError(err, 'EPROTOCOL')) {
    return new FetchTryError(`bad segment from ${where}: ${err.message}`, true, undefined, { cause: err });
  }
  return err;
}

/**
 * Fetches every location's segment into the sinks `openSink` gives, at most `concurrency` at a time.
 * Resolves when all are finished; rejects with EFETCH (a map output cannot be had), EKILLED (the
 * caller's signal) or a sink's own error, only after every try in flight has ended and its sink was
 * finished or aborted.
 */
export async function fetchAll(options: FetchAllOptions): Promise<void> {
  const { jobId, reduceIndex, local, counters, openSink } = options;
  const partitions = options.partitions ?? [reduceIndex];
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  const retries = options.retries ?? DEFAULT_RETRIES;
  const backoffMs = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  assertValidShuffleId(jobId, 'jobId');
  if (!Number.isInteger(reduceIndex) || reduceIndex < 0) {
    throw new MinimrError('EINTERNAL', `invalid reduceIndex ${reduceIndex}`, { jobId, reduceIndex });
  }
  if ((options.locations === undefined) === (options.directory === undefined)) {
    throw new MinimrError('EINTERNAL', 'fetchAll takes either the map output locations or a directory of them', {
      jobId,
      reduceIndex,
    });
  }
  // One segment per (partition, map), partition by partition: consecutive fetches go to different maps.
  const directory = options.directory ?? new MapOutputDirectory({ partitions, locations: options.locations });
  if (!Number.isInteger(concurrency) || concurrency < 1 || !Number.isInteger(retries) || retries < 0 || backoffMs < 0) {
    throw new MinimrError('EINTERNAL', 'fetch options out of range', { jobId, concurrency, retries, backoffMs });
  }
  if (options.signal?.aborted) throw killed(jobId, reduceIndex);

  // One controller stops everything: the caller's signal, or the first map output that cannot be had.
  const stop = new AbortController();
  const onCallerAbort = (): void => stop.abort();
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  // HTTPS trusting only the cluster's authority when the cluster is TLS (storage's data-port transport).
  const agent = newDataPortAgent(concurrency);
  let firstError: unknown;

  /** Fetches one segment; false when its output was lost meanwhile (the segment waits for the map's next output). */
  const fetchOne = async (loc: MapOutputLocation, partition: number): Promise<boolean> => {
    const isLocal = local !== undefined && loc.workerId === local.workerId;
    let lastError: unknown;
    let tries = 0;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (stop.signal.aborted) break;
      tries++;
      try {
        const header = isLocal
          ? await readLocal(local.rootDir, jobId, loc, partition, openSink, stop.signal)
          : await fetchRemote(agent, jobId, options.shuffleSecret, loc, partition, timeoutMs, openSink, stop.signal);
        if (counters) {
          if (isLocal) counters.shuffleBytesLocal += header.length;
          else counters.shuffleBytesRemote += header.length;
        }
        options.onFetched?.(loc, header);
        return true;
      } catch (err) {
        lastError = err;
        if (!(err instanceof FetchTryError)) throw err; // the reducer's own failure, not the map's
        if (directory.isLost(loc)) return false;
        if (!err.retriable || attempt === retries) break;
        await sleep(backoffMs * 2 ** attempt, undefined, { signal: stop.signal }).catch(() => undefined);
        if (directory.isLost(loc)) return false;
      }
    }
    // Stopped by the caller, or by another map's failure (whose error is the one reported).
    if (stop.signal.aborted) throw killed(jobId, reduceIndex);
    throw fetchFailed(jobId, reduceIndex, partition, loc, isLocal, tries, lastError);
  };

  const worker = async (): Promise<void> => {
    while (!stop.signal.aborted && !directory.finished) {
      const item = directory.take();
      if (item === undefined) {
        await directory.changed(stop.signal);
        continue;
      }
      try {
        if (await fetchOne(item.loc, item.partition)) directory.fetched(item);
        else directory.refetch(item);
      } catch (err) {
        firstError ??= err;
        stop.abort();
      }
    }
  };

  try {
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  } finally {
    options.signal?.removeEventListener('abort', onCallerAbort);
    agent.destroy();
  }
  if (options.signal?.aborted) throw killed(jobId, reduceIndex);
  if (firstError !== undefined) throw firstError;
}

/**
 * Every segment's stored bytes in memory, in map order: the simplest sink over `fetchAll`. Only the
 * fetch tests call it (no task does: `ReduceShuffle` fetches under a memory budget, spilling to disk).
 */
export async function fetchMapOutputs(options: FetchMapOutputsOptions): Promise<FetchedSegment[]> {
  const segments: FetchedSegment[] = [];
  await fetchAll({
    ...options,
    openSink: async (loc, header) => {
      const data = Buffer.allocUnsafe(header.length);
      let got = 0;
      return {
        write: (chunk) => {
          got += chunk.copy(data, got);
        },
        finish: () => {
          segments.push({
            mapIndex: loc.mapIndex,
            attemptId: loc.attemptId,
            workerId: loc.workerId,
            records: header.records,
            runs: header.runs,
            data,
            local: header.local,
          });
        },
        abort: () => undefined,
      };
    },
  });
  // Map order, whatever order the locations came in: the merge breaks key ties by run order, so the
  // order of equal keys' values in the reduce is the same on every run.
  return segments.sort((a, b) => a.mapIndex - b.mapIndex);
}

function killed(jobId: string, reduceIndex: number): MinimrError {
  return new MinimrError('EKILLED', `shuffle fetch of reduce ${reduceIndex} of job ${jobId} was cancelled`, {
    jobId,
    reduceIndex,
  });
}

function fetchFailed(
  jobId: string,
  reduceIndex: number,
  partition: number,
  loc: MapOutputLocation,
  isLocal: boolean,
  tries: number,
  cause: unknown,
): MinimrError {
  const why = cause instanceof Error ? cause.message : String(cause);
  const where = isLocal ? 'local disk' : `worker ${loc.workerId} (${loc.host}:${loc.dataPort})`;
  return new MinimrError(
    'EFETCH',
    `cannot fetch output of map ${loc.mapIndex} (attempt ${loc.attemptId}) for reduce ${reduceIndex}` +
      `${partition !== reduceIndex ? ` (partition ${partition})` : ''} of job ${jobId} ` +
      (`from ${where} ` +
        `after ${tries} ${tries === 1 ? 'try' : 'tries'}: ${why}; the ` +
        `map will be re-run and this reduce retried`),
    {
      jobId,
      mapIndex: loc.mapIndex,
      attemptId: loc.attemptId,
      reduceIndex,
      partition,
      workerId: loc.workerId,
      host: loc.host,
      dataPort: loc.dataPort,
      tries,
      status: cause instanceof FetchTryError ? cause.status : undefined,
    },
    { cause },
  );
}

/**
 * Streams one try's bytes into a fresh sink, checking length and each run's crc32 on the way;
 * finishes the sink when all hold, aborts it otherwise. `chunksAreGarbage`: each chunk dies once
 * written (socket data), as opposed to memory the source reads into again; the GC pacer counts
 * those bytes (gc-pacer.ts).
 */
async function pump(
  header: SegmentHeader,
  sink: SegmentSink,
  chunks: AsyncIterable<Buffer>,
  where: string,
  chunksAreGarbage: boolean,
  status?: number,
): Promise<void> {
  let done = false;
  try {
    let got = 0;
    const { runs } = header;
    let run = 0;
    let runEnd = runs[0]?.length ?? 0;
    let crc = 0;
    /** Checks every run that ends at `got` (empty ones included) and moves on to the next. */
    const closeRuns = (): void => {
      while (run < runs.length && got === runEnd) {
        const expected = runs[run]!.crc32 >>> 0;
        if (crc >>> 0 !== expected) {
          const which = runs.length > 1 ? ` (run ${run + 1} of ${runs.length})` : '';
          throw new FetchTryError(
            `crc32 mismatch in segment from ${where}${which}: expected ${expected}, got ${crc >>> 0}`,
            true,
            status,
          );
        }
        crc = 0;
        if (++run < runs.length) runEnd += runs[run]!.length;
      }
    };
    closeRuns();
    const it = chunks[Symbol.asyncIterator]();
    for (;;) {
      let step: IteratorResult<Buffer>;
      try {
        step = await it.next();
      } catch (err) {
        // The connection or the map's file, never the sink: a bad try.
        throw err instanceof FetchTryError
          ? err
          : new FetchTryError(`reading from ${where}: ${(err as Error).message}`, true, status, { cause: err });
      }
      if (step.done) break;
      const chunk = step.value;
      if (got + chunk.length > header.length) {
        throw new FetchTryError(`data from ${where} is longer than its ${header.length}-byte segment`, true, status);
      }
      for (let pos = 0; pos < chunk.length; ) {
        const take = Math.min(chunk.length - pos, runEnd - got);
        crc = crc32(pos === 0 && take === chunk.length ? chunk : chunk.subarray(pos, pos + take), crc);
        got += take;
        pos += take;
        closeRuns();
      }
      if (chunksAreGarbage) noteTransientBytes(chunk.length);
      try {
        await sink.write(chunk);
      } catch (err) {
        throw sinkError(err, where);
      }
    }
    if (got !== header.length || run < runs.length)
      throw new FetchTryError(`short segment from ${where}: ${got} of ${header.length} bytes`, true, status);
    try {
      await sink.finish();
    } catch (err) {
      throw sinkError(err, where);
    }
    done = true;
  } finally {
    if (!done) await sink.abort();
  }
}

async function readLocal(
  rootDir: string,
  jobId: string,
  loc: MapOutputLocation,
  reduceIndex: number,
  openSink: OpenSegmentSink,
  signal: AbortSignal,
): Promise<SegmentHeader> {
  const paths = mapOutputPaths(rootDir, jobId, loc.attemptId);
  let partitions: readonly (readonly PartitionIndexEntry[])[];
  try {
    ({ partitions } = await readIndexFile(paths.indexFile));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new FetchTryError(`map output index ${paths.indexFile} is missing`, false, undefined, { cause: err });
    if (isMinimrError(err, 'ECHECKSUM')) throw new FetchTryError(err.message, true, undefined, { cause: err });
    throw new FetchTryError(`cannot read ${paths.indexFile}: ${(err as Error).message}`, true, undefined, {
      cause: err,
    });
  }
  const runs = partitions[reduceIndex];
  if (!runs)
    throw new FetchTryError(
      `partition ${reduceIndex} out of range: map output has ${partitions.length} partitions`,
      false,
    );
  let fh: FileHandle;
  try {
    fh = await open(paths.dataFile, 'r');
  } catch (err) {
    throw new FetchTryError(
      `cannot open ${paths.dataFile}: ${(err as Error).message}`,
      (err as NodeJS.ErrnoException).code !== 'ENOENT',
      undefined,
      { cause: err },
    );
  }
  try {
    const { size } = await fh.stat();
    if (size < runsEnd(runs)) throw new FetchTryError(`${paths.dataFile} is truncated`, true);
    const header = segmentHeader(runs, { path: paths.dataFile, runOffsets: runs.map((r) => r.offset) });
    const sink = await openSink(loc, header, signal);
    // One read buffer for the whole segment: the sink is done with a chunk before the next is read
    // (pump awaits it). A fresh one per 256 KiB read was garbage the GC pacer collected every 16 MiB:
    // a full GC per 64 reads.
    const reads = readRuns(fh, runs, LOCAL_CHUNK, true);
    async function* chunks(): AsyncGenerator<Buffer> {
      try {
        for (;;) {
          if (signal.aborted) throw new FetchTryError('stopped', false);
          const step = await reads.next();
          if (step.done) return;
          yield step.value;
        }
      } finally {
        await reads.return(undefined);
      }
    }
    // A file that ends inside a run (truncated after the check above) fails the try in pump, retriably.
    await pump(header, sink, chunks(), paths.dataFile, false);
    return header;
  } finally {
    await fh.close();
  }
}

/** `file`: where a local map output's runs lie; none for a segment fetched over HTTP. */
function segmentHeader(runs: readonly SegmentRun[], file?: SegmentHeader['file']): SegmentHeader {
  const header = {
    ...runTotals(runs),
    runs: runs.map(({ length, rawLength, records, crc32 }) => ({ length, rawLength, records, crc32 })),
  };
  return file ? { ...header, local: true, file } : { ...header, local: false };
}

function headerNumber(res: IncomingMessage, name: string): number | undefined {
  const raw = res.headers[name];
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}

async function fetchRemote(
  agent: Agent,
  jobId: string,
  secret: string,
  loc: MapOutputLocation,
  reduceIndex: number,
  timeoutMs: number,
  openSink: OpenSegmentSink,
  signal: AbortSignal,
): Promise<SegmentHeader> {
  const where = `${loc.host}:${loc.dataPort}`;
  if (signal.aborted) throw new FetchTryError('stopped', false);
  let req: ClientRequest | undefined;
  // Not get()'s own `signal` option: that one still destroys the request after its response ended,
  // i.e. the keep-alive socket now serving another request, with nobody listening for the error.
  const onAbort = (): void => {
    req?.destroy(new FetchTryError('stopped', false));
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await fetchRemoteTry();
  } finally {
    signal.removeEventListener('abort', onAbort);
  }

  async function fetchRemoteTry(): Promise<SegmentHeader> {
    const path = shuffleUrlPath(jobId, loc.attemptId, reduceIndex);
    const requestHash = shuffleRequestHash(secret, path);
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      req = dataPortRequest(
        {
          host: loc.host,
          port: loc.dataPort,
          path,
          headers: { [SHUFFLE_HASH_HEADER]: requestHash },
          agent,
          timeout: timeoutMs,
        },
        resolve,
      );
      req.end();
      req.on('timeout', () => req!.destroy(new FetchTryError(`no data from ${where} for ${timeoutMs} ms`, true)));
      req.on('error', (err) => {
        reject(
          err instanceof FetchTryError
            ? err
            : new FetchTryError(`cannot fetch from ${where}: ${err.message}`, true, undefined, { cause: err }),
        );
      });
    });
    // Errors reach us through the iterator in `pump` or the completeness check; this one only keeps an
    // error on a response nobody reads at that moment (waiting for memory, stopped) from going uncaught.
    res.on('error', () => undefined);
    try {
      const status = res.statusCode ?? 0;
      if (status !== 200) {
        const body = await readErrorBody(res);
        const retriable = !(status >= 400 && status < 500);
        throw new FetchTryError(`HTTP ${status} from ${where}${body ? `: ${body}` : ''}`, retriable, status);
      }
      const reply = res.headers[SHUFFLE_REPLY_HEADER];
      if (!sameHash(typeof reply === 'string' ? reply : undefined, shuffleReplyHash(secret, requestHash))) {
        throw new FetchTryError(`${where} does not prove it knows job ${jobId}'s shuffle secret`, false, status);
      }
      const length = headerNumber(res, HEADER_LENGTH);
      const records = headerNumber(res, HEADER_RECORDS);
      const rawLength = headerNumber(res, HEADER_RAW_LENGTH);
      const runsText = res.headers[HEADER_RUNS];
      const runs = typeof runsText === 'string' ? parseRunsHeader(runsText) : undefined;
      if (length === undefined || records === undefined || rawLength === undefined || runs === undefined) {
        throw new FetchTryError(`response from ${where} lacks the segment headers`, true, status);
      }
      const header = segmentHeader(runs);
      if (header.length !== length || header.records !== records || header.rawLength !== rawLength) {
        throw new FetchTryError(
          `response from ${where} has segment headers whose runs do not add up to their totals`,
          true,
          status,
        );
      }
      // Waiting for memory is not the server's silence: no idle timeout while the sink is not open.
      res.pause();
      req!.setTimeout(0);
      const sink = await openSink(loc, header, signal);
      req!.setTimeout(timeoutMs);
      await pump(header, sink, res, where, true, status);
      return header;
    } finally {
      if (!res.complete) req!.destroy();
    }
  }
}

function readErrorBody(res: IncomingMessage): Promise<string> {
  return new Promise((done) => {
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
  });
}

import { open } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import { isMinimrError, type MinimrErrorCode } from '../errors.js';
import { redactPrivatePaths } from '../util/index.js';
import { readIndexFile, readRuns, runsEnd, runTotals } from './index-file.js';
import { isValidShuffleId, mapOutputPaths } from './paths.js';
import {
  sameHash,
  SHUFFLE_HASH_HEADER,
  SHUFFLE_REPLY_HEADER,
  shuffleReplyHash,
  shuffleRequestHash,
} from './shuffle-secret.js';
import { MAX_MAP_OUTPUT_RUNS, type PartitionIndexEntry, type SegmentRun } from './types.js';

/**
 * ShuffleHandler: serves `GET /shuffle/<jobId>/<attemptId>/<partition>` from the map outputs under
 * `rootDir`, one partition's segment per request: its runs (one or two, see MAX_MAP_OUTPUT_RUNS) one
 * after the other, streamed from the data file exactly as stored (frames stay compressed: the
 * reducer decompresses, or keeps them compressed on its disk). Headers give the totals (record count,
 * stored length, raw length) and, per run, its stored length, raw length, records and the crc32 of
 * its stored bytes (`x-minimr-runs`: `length:rawLength:records:crc32`, comma-separated, in order).
 * The index is read and
 * verified on every request (it is small and it is the only proof the output is complete); the segment
 * is not verified here — the reducer checks it against the crc32 header, so a bad disk shows up as a
 * fetch failure that re-runs the map.
 */

const SHUFFLE_PATH_PREFIX = '/shuffle/';
export const HEADER_RECORDS = 'x-minimr-records';
export const HEADER_LENGTH = 'x-minimr-length';
/** The segment's runs, in order: `length:rawLength:records:crc32`, comma-separated. */
export const HEADER_RUNS = 'x-minimr-runs';
/** Bytes of the segment's records once decompressed: the reducer decides memory or disk from it. */
export const HEADER_RAW_LENGTH = 'x-minimr-raw-length';

export interface ShuffleHandlerOptions {
  readonly rootDir: string;
  /** The shuffle secret of a job this worker ran maps of (none: its output is served to nobody). */
  readonly jobSecret: (jobId: string) => string | undefined;
}

export type ShuffleRequestHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/** The URL path a reducer asks for; ids are validated by the server, not trusted from here. */
export function shuffleUrlPath(jobId: string, attemptId: string, partition: number): string {
  return `${SHUFFLE_PATH_PREFIX}${jobId}/${attemptId}/${partition}`;
}

function sendError(
  res: ServerResponse,
  status: number,
  code: MinimrErrorCode,
  message: string,
  details: Record<string, string | number | undefined>,
): void {
  // The reducer's attempt error reaches clients: this worker's paths stay in its own log.
  const body = JSON.stringify({ code, message: redactPrivatePaths(message), details });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Read size when streaming a segment's runs. */
const SERVE_CHUNK = 256 * 1024;

/** The `x-minimr-runs` header of a segment. */
function runsHeader(runs: readonly SegmentRun[]): string {
  return runs.map((r) => `${r.length}:${r.rawLength}:${r.records}:${r.crc32 >>> 0}`).join(',');
}

/** Parses `x-minimr-runs`; undefined when malformed or out of range. */
export function parseRunsHeader(text: string): SegmentRun[] | undefined {
  const parts = text.split(',');
  if (parts.length > MAX_MAP_OUTPUT_RUNS) return undefined;
  const runs: SegmentRun[] = [];
  for (const part of parts) {
    const m = /^(\d{1,15}):(\d{1,15}):(\d{1,15}):(\d{1,10})$/.exec(part);
    if (!m || Number(m[4]) > 0xffffffff) return undefined;
    runs.push({ length: Number(m[1]), rawLength: Number(m[2]), records: Number(m[3]), crc32: Number(m[4]) });
  }
  return runs;
}

/** Returns true when the URL was a shuffle URL (answered, whatever the outcome), false otherwise. */
export function createShuffleRequestHandler(options: ShuffleHandlerOptions): ShuffleRequestHandler {
  const { rootDir } = options;
  return (req, res) => {
    const url = req.url ?? '';
    const pathname = url.split('?', 1)[0]!;
    if (!pathname.startsWith(SHUFFLE_PATH_PREFIX)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      sendError(res, 405, 'EPROTOCOL', `method ${req.method ?? '?'} not allowed on shuffle URLs`, {});
      return true;
    }
    // Split without decoding: a %2e%2e or %2f stays inside one part and fails the id check below.
    const parts = pathname.slice(SHUFFLE_PATH_PREFIX.length).split('/');
    const [jobId = '', attemptId = '', partitionText = ''] = parts;
    if (
      parts.length !== 3 ||
      !isValidShuffleId(jobId) ||
      !isValidShuffleId(attemptId) ||
      !/^\d{1,9}$/.test(partitionText)
    ) {
      sendError(res, 400, 'EBADPATH', 'malformed shuffle URL: expected /shuffle/<jobId>/<attemptId>/<partition>', {
        url: url.slice(0, 200),
      });
      return true;
    }
    const partition = Number(partitionText);
    // Before anything else: a request without the job's secret learns nothing, not even whether the output exists.
    const secret = options.jobSecret(jobId);
    const given = req.headers[SHUFFLE_HASH_HEADER];
    const requestHash = typeof given === 'string' ? given : undefined;
    if (secret === undefined || !sameHash(requestHash, shuffleRequestHash(secret, pathname))) {
      sendError(
        res,
        403,
        'ETOKEN',
        `shuffle requests need the HMAC of the URL under job ${jobId}'s shuffle secret (header ${SHUFFLE_HASH_HEADER})`,
        { jobId },
      );
      return true;
    }
    res.setHeader(SHUFFLE_REPLY_HEADER, shuffleReplyHash(secret, requestHash!));
    serveSegment(rootDir, jobId, attemptId, partition, req, res).catch((err: unknown) => {
      // Headers already sent means the body was cut short; the client sees a short read and retries.
      if (res.headersSent) res.destroy(err instanceof Error ? err : undefined);
      else
        sendError(res, 500, 'EINTERNAL', err instanceof Error ? err.message : String(err), {
          jobId,
          attemptId,
          partition,
        });
    });
    return true;
  };
}

async function serveSegment(
  rootDir: string,
  jobId: string,
  attemptId: string,
  partition: number,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const details = { jobId, attemptId, partition };
  const paths = mapOutputPaths(rootDir, jobId, attemptId);
  let partitions: readonly (readonly PartitionIndexEntry[])[];
  try {
    ({ partitions } = await readIndexFile(paths.indexFile));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      sendError(res, 404, 'EFETCH', `no map output for job ${jobId} attempt ${attemptId} on this worker`, details);
    } else if (isMinimrError(err, 'ECHECKSUM')) {
      sendError(res, 500, 'EFETCH', err.message, details);
    } else {
      throw err;
    }
    return;
  }
  const runs = partitions[partition];
  if (!runs) {
    sendError(
      res,
      400,
      'EFETCH',
      `partition ${partition} out of range: map output has ${partitions.length} partitions`,
      details,
    );
    return;
  }
  // Check the data file really holds the segment, so a truncated file is an error status, not a
  // response that ends early after a 200.
  const fh = await open(paths.dataFile, 'r').catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  });
  if (!fh) {
    sendError(res, 404, 'EFETCH', `map output data of job ${jobId} attempt ${attemptId} is missing`, details);
    return;
  }
  let handedOver = false;
  try {
    const { size } = await fh.stat();
    const end = runsEnd(runs);
    if (size < end) {
      sendError(
        res,
        500,
        'EFETCH',
        `map output data file is truncated (${size} bytes, segment ends at ${end})`,
        details,
      );
      return;
    }
    const { length, records, rawLength } = runTotals(runs);
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': length,
      [HEADER_LENGTH]: length,
      [HEADER_RECORDS]: records,
      [HEADER_RAW_LENGTH]: rawLength,
      [HEADER_RUNS]: runsHeader(runs),
    });
    if (req.method === 'HEAD' || length === 0) {
      res.end();
      return;
    }
    handedOver = true;
    // pipeline ends the reads however the response ends, including a reducer that hung up before we
    // started; the handle closes once a read in progress is done.
    pipeline(Readable.from(readRuns(fh, runs, SERVE_CHUNK)), res, () => {
      fh.close().catch(() => undefined);
    });
  } finally {
    if (!handedOver) await fh.close();
  }
}

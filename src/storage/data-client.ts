import {
  Agent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { deserializeError, MinimrError, type SerializedError } from '../errors.js';
import type { BlockWriteResult } from './block-store.js';
import { BLOCK_TOKEN_HEADER } from './block-token.js';
import type { DatanodeAddress } from './types.js';

/**
 * How this process reaches data ports (blocks, shuffle, attempt logs): plain HTTP, or, in a TLS
 * cluster, HTTPS trusting the cluster's authority and nothing else (its workers' certificates are
 * signed by it for their advertised hosts). A process belongs to one cluster: the worker sets this
 * when it registers, a task process from its config, a client from the authority it pinned.
 */
let dataPortTls: { readonly ca: Buffer; readonly agent: HttpsAgent } | undefined;
/** Keep-alive: a job reads and writes many blocks between the same few workers. */
const plainAgent = new Agent({ keepAlive: true, maxSockets: 64 });

/** From now on, data ports are reached over HTTPS trusting only `ca` (PEM); undefined: plain HTTP again. */
export function trustClusterAuthority(ca: string | Buffer | undefined): void {
  if (ca === undefined) {
    dataPortTls?.agent.destroy();
    dataPortTls = undefined;
    return;
  }
  const pem = Buffer.from(ca);
  if (dataPortTls?.ca.equals(pem)) return;
  dataPortTls?.agent.destroy();
  dataPortTls = { ca: pem, agent: new HttpsAgent({ keepAlive: true, maxSockets: 64, ca: pem }) };
}

/** The authority data ports are checked against, when they are reached over HTTPS. */
export function clusterAuthority(): Buffer | undefined {
  return dataPortTls?.ca;
}

/** A keep-alive agent of its own for data ports (a shuffle's fetches), HTTP or HTTPS as this process reaches them. */
export function newDataPortAgent(maxSockets: number): Agent {
  return dataPortTls
    ? new HttpsAgent({ keepAlive: true, maxSockets, ca: dataPortTls.ca })
    : new Agent({ keepAlive: true, maxSockets });
}

/**
 * A request to a data port, over HTTP or HTTPS as this process reaches them (`trustClusterAuthority`);
 * without an agent of its own, the shared keep-alive one.
 */
export function dataPortRequest(options: RequestOptions, onResponse?: (res: IncomingMessage) => void): ClientRequest {
  if (dataPortTls) {
    return httpsRequest({ ...options, agent: options.agent ?? dataPortTls.agent, ca: dataPortTls.ca }, onResponse);
  }
  return httpRequest({ ...options, agent: options.agent ?? plainAgent }, onResponse);
}
const DEFAULT_TIMEOUT_MS = 60_000;
export const ERROR_TRAILER = 'x-minimr-error';
export const RANGE_LENGTH_HEADER = 'x-range-length';
export const BLOCK_CRC_HEADER = 'x-block-crc32';

export interface DataRequestOptions {
  /** Idle time after which the request fails with ETIMEOUT. */
  readonly timeoutMs?: number;
  /** The block access token the NameNode issued for this block and operation. */
  readonly token?: string;
}

/** How an upload's body is sent. */
export interface UploadOptions extends DataRequestOptions {
  /** The datanode refuses the bytes unless they have this CRC-32 (damaged in transit). */
  readonly expectedCrc32?: number;
  /**
   * Told of each chunk of a streamed body once the socket has taken its bytes (the write's
   * callback, not when the next chunk is asked for: a chunk may wait in the socket's queue), so
   * that its memory may be refilled. A request that fails may never tell of the chunks it held.
   */
  readonly onChunkSent?: (chunk: Buffer) => void;
}

export interface RemoteReplicationResult {
  readonly blockId: string;
  readonly succeeded: string[];
  readonly failed: Array<{ workerId: string; code: string; message: string }>;
}

function blockUrlPath(blockId: string, suffix = ''): string {
  return `/blocks/${encodeURIComponent(blockId)}${suffix}`;
}

function connectError(target: DatanodeAddress, blockId: string, cause: unknown): MinimrError {
  if (cause instanceof MinimrError) return cause;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new MinimrError(
    'ECONNECT',
    `datanode ${target.workerId} (${target.host}:${target.dataPort}) failed for block ${blockId}: ${reason}`,
    {
      workerId: target.workerId,
      host: target.host,
      port: target.dataPort,
      blockId,
    },
    { cause },
  );
}

async function readBody(res: IncomingMessage, limit = 1 << 20): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new MinimrError('EPROTOCOL', `response body over ${limit} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts);
}

/** Turns a non-2xx answer into the MinimrError the datanode sent (its JSON body), so codes survive HTTP. */
async function errorFromResponse(res: IncomingMessage, target: DatanodeAddress, blockId: string): Promise<MinimrError> {
  const body = await readBody(res).catch(() => Buffer.alloc(0));
  try {
    const parsed = JSON.parse(body.toString('utf8')) as SerializedError;
    if (typeof parsed.code === 'string' && typeof parsed.message === 'string') {
      return deserializeError({
        ...parsed,
        details: { ...parsed.details, workerId: parsed.details?.workerId ?? target.workerId, blockId },
      });
    }
  } catch {
    // not JSON: fall through to a generic error
  }
  return new MinimrError(
    'EPROTOCOL',
    `datanode ${target.workerId} answered HTTP ${res.statusCode} for block ${blockId}`,
    { workerId: target.workerId, blockId, status: res.statusCode },
  );
}

function send(
  target: DatanodeAddress,
  blockId: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer | AsyncIterable<Buffer> | undefined,
  options: DataRequestOptions & Pick<UploadOptions, 'onChunkSent'>,
): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const withToken = options.token === undefined ? headers : { ...headers, [BLOCK_TOKEN_HEADER]: options.token };
    const req = dataPortRequest({ host: target.host, port: target.dataPort, method, path, headers: withToken });
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    req.setTimeout(timeoutMs, () => {
      req.destroy(
        new MinimrError('ETIMEOUT', `datanode ${target.workerId} idle for ${timeoutMs} ms on block ${blockId}`, {
          workerId: target.workerId,
          blockId,
        }),
      );
    });
    req.once('error', (err) => reject(connectError(target, blockId, err)));
    req.once('response', (res) => {
      res.once('error', () => undefined);
      if ((res.statusCode ?? 500) >= 400) errorFromResponse(res, target, blockId).then(reject, reject);
      else resolve(res);
    });
    if (body === undefined || Buffer.isBuffer(body)) {
      req.end(body);
      return;
    }
    void (async () => {
      try {
        const sent = options.onChunkSent;
        for await (const chunk of body) {
          if (req.destroyed) return;
          if (!req.write(chunk, sent && (() => sent(chunk)))) await drainedOrClosed(req);
        }
        req.end();
      } catch (err) {
        req.destroy(err instanceof Error ? err : new Error(String(err)));
      }
    })();
  });
}

function drainedOrClosed(req: ClientRequest): Promise<void> {
  if (req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      req.off('drain', done);
      req.off('close', done);
      resolve();
    };
    req.once('drain', done);
    req.once('close', done);
  });
}

/** Stores a block on one datanode; `expectedCrc32` lets the datanode refuse bytes damaged in transit. */
export async function putRemoteBlock(
  target: DatanodeAddress,
  blockId: string,
  data: Buffer | AsyncIterable<Buffer>,
  options: UploadOptions = {},
): Promise<BlockWriteResult> {
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
  if (options.expectedCrc32 !== undefined) headers[BLOCK_CRC_HEADER] = String(options.expectedCrc32);
  if (Buffer.isBuffer(data)) headers['content-length'] = String(data.length);
  const res = await send(target, blockId, 'PUT', blockUrlPath(blockId), headers, data, options);
  const parsed = JSON.parse((await readBody(res)).toString('utf8')) as Partial<BlockWriteResult>;
  if (typeof parsed.length !== 'number' || typeof parsed.crc32 !== 'number') {
    throw new MinimrError('EPROTOCOL', `datanode ${target.workerId} sent a malformed PUT answer for ${blockId}`, {
      workerId: target.workerId,
      blockId,
    });
  }
  return { length: parsed.length, crc32: parsed.crc32 };
}

/**
 * Bytes [start, end) of a block from one datanode. The datanode verifies checksums as it sends; a
 * mismatch found mid-stream arrives as an error trailer after the good bytes, so callers can resume
 * on another replica exactly where this one stopped.
 */
export async function* readRemoteBlock(
  target: DatanodeAddress,
  blockId: string,
  start: number,
  end: number,
  options: DataRequestOptions = {},
): AsyncIterable<Buffer> {
  const res = await send(
    target,
    blockId,
    'GET',
    `${blockUrlPath(blockId)}?start=${start}&end=${end}`,
    {},
    undefined,
    options,
  );
  const expected = Number(res.headers[RANGE_LENGTH_HEADER]);
  let received = 0;
  try {
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        received += chunk.length;
        yield chunk;
      }
    } catch (err) {
      throw connectError(target, blockId, err);
    }
    const trailer = res.trailers[ERROR_TRAILER];
    if (trailer !== undefined) {
      const serialized = JSON.parse(trailer) as SerializedError;
      throw deserializeError(serialized);
    }
    if (received !== expected)
      throw connectError(target, blockId, `response ended after ${received} of ${expected} bytes`);
  } finally {
    if (!res.complete) res.destroy();
  }
}

export async function deleteRemoteBlock(
  target: DatanodeAddress,
  blockId: string,
  options: DataRequestOptions = {},
): Promise<boolean> {
  const res = await send(target, blockId, 'DELETE', blockUrlPath(blockId), {}, undefined, options);
  const parsed = JSON.parse((await readBody(res)).toString('utf8')) as { deleted?: unknown };
  return parsed.deleted === true;
}

/** Asks `source` to copy its replica of the block to `targets` (re-replication). */
export async function replicateRemoteBlock(
  source: DatanodeAddress,
  blockId: string,
  targets: readonly DatanodeAddress[],
  options: DataRequestOptions = {},
): Promise<RemoteReplicationResult> {
  const body = Buffer.from(JSON.stringify({ targets }));
  const res = await send(
    source,
    blockId,
    'POST',
    blockUrlPath(blockId, '/replicate'),
    { 'content-type': 'application/json', 'content-length': String(body.length) },
    body,
    options,
  );
  return JSON.parse((await readBody(res)).toString('utf8')) as RemoteReplicationResult;
}

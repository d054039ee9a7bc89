import type { IncomingMessage, ServerResponse } from 'node:http';
import { crc32 } from 'node:zlib';
import { MinimrError, serializeError, type MinimrErrorCode, type SerializedError } from '../errors.js';
import { publicError } from '../util/index.js';
import { clampRange, coalesced, validateBlockId, type BlockStore } from './block-store.js';
import { BLOCK_TOKEN_HEADER, replicationScope, type BlockOperation, type BlockTokenKey } from './block-token.js';
import {
  BLOCK_CRC_HEADER,
  ERROR_TRAILER,
  putRemoteBlock,
  RANGE_LENGTH_HEADER,
  type RemoteReplicationResult,
} from './data-client.js';
import type { DatanodeAddress } from './types.js';

export type DataRequestHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/** How a datanode checks block access tokens: the key it got when it registered (none yet: refuse all). */
export interface DataAccess {
  blockKey(): BlockTokenKey | undefined;
  /** Wall-clock ms for token expiry (default Date.now). */
  now?(): number;
  /** Told of each error answered, in full: the answer itself leaves out this host's paths. */
  logError?(err: SerializedError): void;
}

const MAX_JSON_BODY = 64 * 1024;
const ROUTE = /^\/blocks\/([^/]*)(\/replicate)?$/;

const STATUS_BY_CODE: Partial<Record<MinimrErrorCode, number>> = {
  ENOENT: 404,
  EBADPATH: 400,
  EPROTOCOL: 400,
  ECHECKSUM: 409,
  EDISKFULL: 507,
  ETIMEOUT: 504,
  ETOKEN: 403,
};

function parseIntegerParam(raw: string | null, name: string): number | undefined {
  if (raw === null || raw === '') return undefined;
  if (!/^\d+$/.test(raw))
    throw new MinimrError('EPROTOCOL', `query parameter ${name} must be a non-negative integer`, { [name]: raw });
  return Number(raw);
}

function isDatanodeAddress(value: unknown): value is DatanodeAddress {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.workerId === 'string' &&
    typeof v.host === 'string' &&
    typeof v.rack === 'string' &&
    Number.isInteger(v.dataPort)
  );
}

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_JSON_BODY) throw new MinimrError('EPROTOCOL', `request body over ${MAX_JSON_BODY} bytes`);
    parts.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(parts).toString('utf8'));
  } catch {
    throw new MinimrError('EPROTOCOL', 'request body is not valid JSON');
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  res
    .writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) })
    .end(payload);
}

function sendError(res: ServerResponse, err: unknown, workerId: string, access: DataAccess): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const full = serializeError(err);
  access.logError?.(full);
  // A client has no use for this worker's file layout (a full disk's error names its directory).
  const serialized = publicError(full);
  const status = STATUS_BY_CODE[serialized.code as MinimrErrorCode] ?? 500;
  // Stacks stay in this worker's logs; clients get what they can act on.
  sendJson(res, status, {
    code: serialized.code,
    message: serialized.message,
    details: { workerId, ...serialized.details },
  });
}

function waitForDrain(res: ServerResponse): Promise<boolean> {
  // A response already closed will never emit 'close' again: waiting would hang the reader forever.
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  return new Promise((resolve) => {
    const finish = (ok: boolean): void => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = (): void => finish(true);
    const onClose = (): void => finish(false);
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

/** What an upload is stored in: a write per MiB, not per socket read. */
const UPLOAD_WRITE_BYTES = 1 << 20;

/** Passes the upload through while checking it against the sender's CRC, failing before the store commits it. */
async function* verifiedUpload(
  body: AsyncIterable<Buffer>,
  expectedCrc: number | undefined,
  blockId: string,
  workerId: string,
): AsyncIterable<Buffer> {
  let crc = 0;
  for await (const chunk of coalesced(body, UPLOAD_WRITE_BYTES)) {
    if (expectedCrc !== undefined) crc = crc32(chunk, crc);
    yield chunk;
  }
  if (expectedCrc !== undefined && crc >>> 0 !== expectedCrc) {
    throw new MinimrError('ECHECKSUM', `upload of block ${blockId} does not match its crc32`, { blockId, workerId });
  }
}

async function serveRead(store: BlockStore, blockId: string, url: URL, res: ServerResponse): Promise<void> {
  const start = parseIntegerParam(url.searchParams.get('start'), 'start');
  const end = parseIntegerParam(url.searchParams.get('end'), 'end');
  const { length } = await store.stat(blockId);
  const range = clampRange(length, start, end);
  const iterator = store.read(blockId, range.start, range.end)[Symbol.asyncIterator]();
  // Pull the first piece before answering 200, so a block corrupt at its start fails with a clean status.
  let step = await iterator.next();
  res.writeHead(200, {
    'content-type': 'application/octet-stream',
    [RANGE_LENGTH_HEADER]: String(range.end - range.start),
    'x-block-length': String(length),
    trailer: ERROR_TRAILER,
  });
  try {
    while (!step.done) {
      if (res.destroyed || (!res.write(step.value) && !(await waitForDrain(res)))) {
        await iterator.return?.();
        return;
      }
      step = await iterator.next();
    }
    res.end();
  } catch (err) {
    // Headers are gone: report the error after the bytes that were good, in a trailer.
    res.addTrailers({ [ERROR_TRAILER]: JSON.stringify({ ...serializeError(err), stack: undefined }) });
    res.end();
  }
}

async function serveWrite(
  store: BlockStore,
  blockId: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const rawCrc = req.headers[BLOCK_CRC_HEADER];
  const expectedCrc = typeof rawCrc === 'string' ? parseIntegerParam(rawCrc, BLOCK_CRC_HEADER) : undefined;
  const result = await store.write(
    blockId,
    verifiedUpload(req as AsyncIterable<Buffer>, expectedCrc, blockId, store.workerId),
  );
  sendJson(res, 200, result);
}

/** Copies a stored block to other datanodes in parallel; each target succeeds or fails on its own. */
export async function replicateBlock(
  store: BlockStore,
  blockId: string,
  targets: readonly DatanodeAddress[],
  writeToken: string,
): Promise<RemoteReplicationResult> {
  const { crc32: expectedCrc32 } = await store.stat(blockId);
  const outcomes = await Promise.allSettled(
    targets.map((target) => putRemoteBlock(target, blockId, store.read(blockId), { expectedCrc32, token: writeToken })),
  );
  const result: RemoteReplicationResult = { blockId, succeeded: [], failed: [] };
  outcomes.forEach((outcome, i) => {
    const workerId = targets[i]!.workerId;
    if (outcome.status === 'fulfilled') result.succeeded.push(workerId);
    else {
      const e = serializeError(outcome.reason);
      result.failed.push({ workerId, code: e.code, message: e.message });
    }
  });
  return result;
}

/**
 * A relay the NameNode ordered: its token binds the targets, so the datanode copies only to the
 * registered workers the NameNode chose, never to a host a caller names.
 */
async function serveReplicate(
  store: BlockStore,
  blockId: string,
  req: IncomingMessage,
  res: ServerResponse,
  key: BlockTokenKey,
  now: number,
): Promise<void> {
  const body = await readJsonBody(req);
  const targets = (body as { targets?: unknown } | null)?.targets;
  if (!Array.isArray(targets) || !targets.every(isDatanodeAddress)) {
    throw new MinimrError('EPROTOCOL', 'replicate body must be {targets: DatanodeAddress[]}', { blockId });
  }
  key.verify(tokenOf(req), blockId, 'replicate', now, replicationScope(targets));
  sendJson(
    res,
    200,
    await replicateBlock(store, blockId, targets, key.issue(blockId, 'write', now + RELAY_WRITE_TOKEN_MS)),
  );
}

/** A relay's own write tokens live only as long as the copy may take. */
const RELAY_WRITE_TOKEN_MS = 10 * 60_000;

function tokenOf(req: IncomingMessage): string | undefined {
  const raw = req.headers[BLOCK_TOKEN_HEADER];
  return typeof raw === 'string' ? raw : undefined;
}

const OPERATION_BY_ROUTE: Record<string, BlockOperation> = { 'GET ': 'read', 'PUT ': 'write', 'DELETE ': 'delete' };

/**
 * The datanode's HTTP surface, to mount on the worker's data server next to the shuffle handler:
 * returns false for URLs outside `/blocks/`, so the caller can try its other handlers.
 */
export function createDataRequestHandler(store: BlockStore, workerId: string, access: DataAccess): DataRequestHandler {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://datanode');
    if (url.pathname !== '/blocks' && !url.pathname.startsWith('/blocks/')) return false;
    const handle = async (): Promise<void> => {
      const match = ROUTE.exec(url.pathname);
      if (!match) throw new MinimrError('EBADPATH', `no such data route: ${url.pathname.slice(0, 200)}`);
      // Not decoded on purpose: a valid id needs no escaping, and `%2e%2e` must not turn into `..`.
      const blockId = validateBlockId(match[1]);
      const route = `${req.method ?? ''} ${match[2] ?? ''}`;
      const key = access.blockKey();
      if (!key)
        throw new MinimrError(
          'ETOKEN',
          `datanode ${workerId} has not registered with a NameNode yet and serves no blocks`,
          { blockId },
        );
      const now = access.now?.() ?? Date.now();
      const op = OPERATION_BY_ROUTE[route];
      if (op !== undefined) key.verify(tokenOf(req), blockId, op, now);
      switch (route) {
        case 'GET ':
          return serveRead(store, blockId, url, res);
        case 'PUT ':
          return serveWrite(store, blockId, req, res);
        case 'DELETE ':
          return sendJson(res, 200, { blockId, deleted: await store.delete(blockId) });
        case 'POST /replicate':
          return serveReplicate(store, blockId, req, res, key, now);
        default:
          res.setHeader('allow', match[2] ? 'POST' : 'GET, PUT, DELETE');
          throw new MinimrError('EPROTOCOL', `method ${req.method} not allowed on ${url.pathname}`, { blockId });
      }
    };
    handle().catch((err: unknown) => {
      // An upload we refused is not read to its end: the connection cannot carry another request.
      if (!req.complete && !res.headersSent) res.setHeader('connection', 'close');
      sendError(res, err, workerId, access);
    });
    return true;
  };
}

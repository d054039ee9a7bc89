/**
 * A worker's data port as a WebHDFS DataNode for reads: the second step of an OPEN that the
 * JobTracker's WebHDFS server redirected here, as a NameNode redirects to a DataNode holding the
 * range's first block. The request carries the JobTracker's signed grant (`datatoken=`: that
 * OPEN of that path and range, for one user, 60 s); the worker hands it to its JobTracker over its
 * link (`webhdfs-open`), which checks it and answers the range's blocks with their read tokens as
 * that user may read them. The worker then reads them as any client would, its own replicas from
 * its disk and the others from their workers' data ports, and streams them out. Nothing else of
 * WebHDFS is served here (CREATE's bytes go to the JobTracker's port); errors are WebHDFS's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MinimrError } from '../errors.js';
import type { Logger } from '../log.js';
import type { BlockStore } from './block-store.js';
import type { DataRequestHandler } from './data-server.js';
import { FsClient } from './fs-client.js';
import type { BlockAllocation, BlockInfo, ClientLocation, FileStatus, NamenodeApi, WrittenBlock } from './types.js';
import { sendRemoteException, waitDrain, webHdfsPathOf } from './webhdfs-http.js';

/** What the JobTracker answers for a grant: the granted range and its blocks. */
export interface WebHdfsOpenPlan {
  readonly fileLength: number;
  readonly start: number;
  readonly end: number;
  readonly blocks: readonly BlockInfo[];
}

/** A write session the JobTracker opened for a CREATE's grant, and what the file takes. */
export interface WebHdfsWriteStart {
  readonly session: string;
  readonly blockSize: number;
  readonly replication: number;
}

export interface WebHdfsDatanodeParts {
  readonly store: BlockStore;
  readonly workerId: string;
  readonly rack?: string;
  readonly logger: Logger;
  /** Asks the JobTracker for the blocks a grant allows (`webhdfs-open` of the worker's link). */
  open(args: { path: string; offset?: number; length?: number; grant: string }): Promise<WebHdfsOpenPlan>;
  /** Starts the file a CREATE's grant allows (`webhdfs-create`); the calls below carry its session. */
  create(args: { path: string; params: Record<string, string>; grant: string }): Promise<WebHdfsWriteStart>;
  allocateBlock(args: { path: string; session: string; client?: ClientLocation }): Promise<BlockAllocation>;
  commitBlock(args: {
    path: string;
    session: string;
    blockId: string;
    length: number;
    crc32: number;
    workerIds: string[];
  }): Promise<unknown>;
  complete(args: { path: string; session: string }): Promise<FileStatus>;
  abandon(args: { path: string; session: string }): Promise<unknown>;
}

/** Query parameters that are not CREATE's own: the grant itself, and what clients add. */
const NOT_CREATE_PARAMS: ReadonlySet<string> = new Set([
  'op',
  'datatoken',
  'user.name',
  'delegation',
  'doas',
  'buffersize',
  'namenoderpcaddress',
]);

function integerParam(url: URL, name: string): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null) return undefined;
  if (!/^\d{1,16}$/.test(raw))
    throw new MinimrError('EBADREQUEST', `Invalid value for webhdfs parameter "${name}": ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** A NameNode that knows only the blocks it was given: an FsClient reads through it and nothing else. */
function plannedBlocks(blocks: readonly BlockInfo[]): NamenodeApi {
  const refuse = (): Promise<never> =>
    Promise.reject(new MinimrError('EINTERNAL', 'a WebHDFS read on a data port asks for its blocks only'));
  return {
    mkdir: refuse,
    stat: refuse,
    list: refuse,
    remove: refuse,
    rename: refuse,
    create: refuse,
    allocateBlock: refuse,
    commitBlock: refuse,
    complete: refuse,
    abandon: refuse,
    getBlocks: async () => [...blocks],
    reportBadReplica: async () => undefined,
    chmod: refuse,
    chown: refuse,
  };
}

/** A CREATE's bytes: the blocks written as any client writes them, the first replica on this worker. */
async function serveCreate(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  grant: string,
  parts: WebHdfsDatanodeParts,
): Promise<void> {
  const path = webHdfsPathOf(url.pathname);
  const params: Record<string, string> = {};
  for (const [key, value] of url.searchParams) if (!NOT_CREATE_PARAMS.has(key)) params[key] = value;
  let session: string | undefined;
  const opened = (): string => {
    if (session === undefined) throw new MinimrError('EINTERNAL', 'a WebHDFS write asked for a block before it began');
    return session;
  };
  const commitBlock = async (p: string, block: WrittenBlock): Promise<void> => {
    await parts.commitBlock({
      path: p,
      session: opened(),
      blockId: block.blockId,
      length: block.length,
      crc32: block.crc32,
      workerIds: [...block.workerIds],
    });
  };
  const namenode: NamenodeApi = {
    ...plannedBlocks([]),
    create: async () => {
      const started = await parts.create({ path, params, grant });
      session = started.session;
      return { blockSize: started.blockSize, replication: started.replication };
    },
    allocateBlock: (p, client) =>
      parts.allocateBlock({
        path: p,
        session: opened(),
        ...(client?.workerId !== undefined
          ? { client: { workerId: client.workerId, ...(client.rack !== undefined ? { rack: client.rack } : {}) } }
          : {}),
      }),
    commitBlock,
    // The last block first, as the NameNode's own complete does (the worker's link has a call for each).
    complete: async (p, lastBlock) => {
      if (lastBlock !== undefined) await commitBlock(p, lastBlock);
      return parts.complete({ path: p, session: opened() });
    },
    abandon: async (p) => {
      if (session !== undefined) await parts.abandon({ path: p, session });
    },
  };
  const fs = new FsClient({
    namenode,
    localStore: parts.store,
    client: { workerId: parts.workerId, ...(parts.rack !== undefined ? { rack: parts.rack } : {}) },
    logger: parts.logger,
  });
  const writer = await fs.createWriter(path);
  try {
    for await (const chunk of req) await writer.write(chunk as Buffer);
    await writer.close();
  } catch (err) {
    await writer.abort().catch(() => undefined);
    throw err;
  }
  const namenodeAddress = url.searchParams.get('namenoderpcaddress') ?? '';
  const authority = /^[A-Za-z0-9.:[\]-]{1,300}$/.test(namenodeAddress) ? namenodeAddress : 'localhost';
  res.writeHead(201, { location: `webhdfs://${authority}${encodeURI(path)}`, 'content-length': 0 }).end();
}

async function serveRedirected(req: IncomingMessage, res: ServerResponse, url: URL, parts: WebHdfsDatanodeParts) {
  const op = (url.searchParams.get('op') ?? '').toUpperCase();
  const grant = url.searchParams.get('datatoken');
  if (grant === null)
    throw new MinimrError('ETOKEN', `no redirect grant (datatoken=): start the ${op} at the JobTracker's port`);
  if (op === 'CREATE' && req.method === 'PUT') return serveCreate(req, res, url, grant, parts);
  if (op !== 'OPEN' || req.method !== 'GET')
    throw new MinimrError(
      'EBADREQUEST',
      `a worker's data port serves only the redirects of WebHDFS's OPEN (GET) and CREATE (PUT), not ` +
        `${req.method} ${op}: send WebHDFS requests to the JobTracker's port`,
    );
  const offset = integerParam(url, 'offset');
  const length = integerParam(url, 'length');
  const path = webHdfsPathOf(url.pathname);
  const plan = await parts.open({
    path,
    grant,
    ...(offset !== undefined ? { offset } : {}),
    ...(length !== undefined ? { length } : {}),
  });
  const fs = new FsClient({
    namenode: plannedBlocks(plan.blocks),
    localStore: parts.store,
    client: { workerId: parts.workerId, ...(parts.rack !== undefined ? { rack: parts.rack } : {}) },
    logger: parts.logger,
  });
  const pieces = fs.readRange(path, plan.start, plan.end)[Symbol.asyncIterator]();
  // The first piece before the headers: a read that cannot start is still an error answer.
  const first = plan.end > plan.start ? await pieces.next() : { done: true as const, value: undefined };
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': plan.end - plan.start });
  if (!first.done) {
    if (!res.write(first.value)) await waitDrain(res);
    for (let next = await pieces.next(); !next.done; next = await pieces.next())
      if (!res.write(next.value)) await waitDrain(res);
  }
  res.end();
}

/** Serves `/webhdfs/v1/...?op=OPEN|CREATE&datatoken=...` on a worker's data port; false for other paths. */
export function createWebHdfsDatanodeHandler(parts: WebHdfsDatanodeParts): DataRequestHandler {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://datanode');
    if (url.pathname !== '/webhdfs/v1' && !url.pathname.startsWith('/webhdfs/v1/')) return false;
    void serveRedirected(req, res, url, parts).catch((err: unknown) => sendRemoteException(res, err, parts.logger));
    return true;
  };
}

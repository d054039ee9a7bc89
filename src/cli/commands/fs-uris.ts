/**
 * `minimr fs` on locations outside the block store (file://, s3://, webhdfs://) and `fs cp` between
 * any two stores. The block store is read and written through the client's FsClient, every other
 * store through its Store (src/storage/stores); both are seen here as a `CopyEnd`, the part of a
 * store a copy needs. A copy streams each file (memory bounded by the stores' own buffers) and
 * makes it visible only when whole, as every store's `create` does.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { MinimrError } from '../../errors.js';
import type { JobClient } from '../../runtime/index.js';
import {
  isExternalUri,
  isInputName,
  joinPath,
  normaliseLocation,
  openExternalStore,
  parseStoreUri,
  storeConfOf,
  type StoreConf,
  type StoreStatus,
} from '../../storage/index.js';
import { keyValuePairs } from '../../util/index.js';

/** What a copy reads and writes of a store. */
interface CopyEnd {
  stat(uri: string): Promise<StoreStatus>;
  list(uri: string): Promise<StoreStatus[]>;
  readRange(uri: string, start: number, end: number): AsyncIterable<Buffer>;
  create(
    uri: string,
    options: { overwrite: boolean },
  ): Promise<{ write(b: Buffer): Promise<void>; close(): Promise<void>; abort(): Promise<void> }>;
  mkdir(uri: string): Promise<void>;
}

/** The stores' settings of `--conf key=value` (s3.endpoint, webhdfs.user, ...). */
export function storeConfOfPairs(pairs: readonly string[] | undefined): StoreConf {
  return storeConfOf(Object.fromEntries(keyValuePairs(pairs, '--conf')));
}

function blockStoreEnd(client: JobClient): CopyEnd {
  const fs = client.fs;
  const status = (s: { path: string; type: 'file' | 'dir'; length: number; mtime: number }): StoreStatus => ({
    uri: s.path,
    type: s.type,
    length: s.length,
    mtime: s.mtime,
    version: `${s.mtime}-${s.length}`,
  });
  return {
    stat: async (path) => status(await fs.stat(path)),
    list: async (path) => (await fs.list(path)).map(status),
    readRange: (path, start, end) => fs.readRange(path, start, end),
    async create(path, options) {
      const writer = await fs.createWriter(path, { overwrite: options.overwrite });
      return {
        write: (b) => writer.write(b),
        close: async () => {
          await writer.close();
        },
        abort: () => writer.abort(),
      };
    },
    mkdir: (path) => fs.mkdir(path, { parents: true }),
  };
}

/** The store a location is in, seen as a CopyEnd (the block store needs `client`). */
async function endOf(uri: string, conf: StoreConf, client: () => Promise<JobClient>): Promise<CopyEnd> {
  if (!isExternalUri(uri)) return blockStoreEnd(await client());
  return (await openExternalStore(uri, conf)).store;
}

/** `fs ls URI`: a directory's entries (or the file), one line each, as `hdfs dfs -ls` lists. */
export async function listUri(uri: string, conf: StoreConf): Promise<StoreStatus[]> {
  const { store, location } = await openExternalStore(uri, conf);
  return store.list(location.uri);
}

/** `fs cat URI`: the file's bytes, or those of a directory's files (not _ or . ones) in name order. */
export async function* catUri(uri: string, conf: StoreConf): AsyncGenerator<Buffer> {
  const { store, location } = await openExternalStore(uri, conf);
  const st = await store.stat(location.uri);
  const files =
    st.type === 'file' ? [st] : (await store.list(location.uri)).filter((f) => f.type === 'file' && isInputName(f.uri));
  for (const f of files.sort((a, b) => (a.uri < b.uri ? -1 : 1)))
    yield* store.readRange(f.uri, 0, Number.POSITIVE_INFINITY, f.version);
}

function nameOf(uri: string): string {
  return uri.replace(/\/+$/, '').split('/').pop() ?? '';
}

/** A child's location under a directory location, in the directory's own form. */
function childOf(dir: string, name: string): string {
  const location = parseStoreUri(dir);
  if (location.scheme === 'minimr') return joinPath(location.path, name);
  return `${location.uri.replace(/\/+$/, '')}/${name}`;
}

/** A copy at least this large runs as a map-only job on the cluster (Hadoop's DistCp), unless `--local`. */
export const DISTRIBUTED_COPY_FILES = 16;
export const DISTRIBUTED_COPY_BYTES = 256 * 1024 * 1024;
/** Maps of a distributed copy when not given (DistCp's -m default), at most one per file. */
const DEFAULT_COPY_MAPS = 20;

export interface CopyOptions {
  overwrite: boolean;
  conf: StoreConf;
  client: () => Promise<JobClient>;
  /** 'auto': a map-only job when the tree is large and a cluster takes part (see copyBetweenStores). */
  mode?: 'auto' | 'local' | 'distributed';
  /** Maps of a distributed copy (default 20, at most one per file). */
  maps?: number;
}

export interface CopyResult {
  files: number;
  bytes: number;
  /** The map-only job that copied, when the copy was distributed. */
  job?: { id: string; maps: number };
}

/** One file of a copy: where from (its listed version) and where to. */
interface CopyItem {
  src: string;
  dst: string;
  bytes: number;
  version: string;
}

/**
 * `fs cp SRC DST`: a file, or a directory's tree, from any store to any other. Into DST when it is an
 * existing directory (keeping the source's name), as cp -r and hdfs dfs -cp do; an existing file is
 * refused (EEXIST) unless `overwrite`. The tree is listed and the destination's directories made
 * here; the files are copied here one by one, or, for a large tree (DISTRIBUTED_COPY_FILES or
 * DISTRIBUTED_COPY_BYTES) when the copy involves the cluster's block store (or with mode
 * 'distributed'), by a map-only job on the cluster (apps/distcp.ts). Its tasks reach the block store
 * through the cluster's WebHDFS with the user's delegation token, so they act with the user's rights;
 * a file:// end is copied here only (a task may touch no other local path than its job's own).
 */
export async function copyBetweenStores(
  source: string,
  destination: string,
  options: CopyOptions,
): Promise<CopyResult> {
  source = normaliseLocation(source);
  destination = normaliseLocation(destination);
  const from = await endOf(source, options.conf, options.client);
  const to = await endOf(destination, options.conf, options.client);
  const st = await from.stat(source);
  let target = destination;
  const there = await to.stat(destination).catch((err: unknown) => {
    if (err instanceof MinimrError && err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (there?.type === 'dir') target = childOf(destination, nameOf(source));
  const items: CopyItem[] = [];
  const list = async (src: string, dst: string): Promise<void> => {
    await to.mkdir(dst);
    for (const entry of await from.list(src)) {
      const child = childOf(dst, nameOf(entry.uri));
      if (entry.type === 'dir') await list(entry.uri, child);
      else items.push({ src: entry.uri, dst: child, bytes: entry.length, version: entry.version });
    }
  };
  if (st.type === 'file') items.push({ src: source, dst: target, bytes: st.length, version: st.version });
  else await list(source, target);
  const bytes = items.reduce((sum, item) => sum + item.bytes, 0);
  if (distributes(source, destination, items.length, bytes, options.mode ?? 'auto')) {
    const job = await distributedCopy(items, source, destination, options);
    return { files: items.length, bytes, job };
  }
  const done = { files: 0, bytes: 0 };
  for (const item of items) {
    const writer = await to.create(item.dst, { overwrite: options.overwrite });
    try {
      for await (const chunk of from.readRange(item.src, 0, Number.POSITIVE_INFINITY)) {
        await writer.write(chunk);
        done.bytes += chunk.length;
      }
      await writer.close();
      done.files++;
    } catch (err) {
      await writer.abort().catch(() => undefined);
      throw err;
    }
  }
  return done;
}

/** Whether a copy runs as a map-only job (see copyBetweenStores). */
function distributes(
  source: string,
  destination: string,
  files: number,
  bytes: number,
  mode: CopyOptions['mode'],
): boolean {
  if (mode === 'local') return false;
  const local = [source, destination].find((uri) => parseStoreUri(uri).scheme === 'file');
  if (mode === 'distributed') {
    if (local !== undefined)
      throw new MinimrError(
        'EUSAGE',
        `fs cp --distributed cannot copy ${local}: a task may read and write no local path but its job's own; ` +
          'copy file:// trees without --distributed',
        { uri: local },
      );
    return true;
  }
  const cluster = !isExternalUri(source) || !isExternalUri(destination);
  return local === undefined && cluster && (files >= DISTRIBUTED_COPY_FILES || bytes >= DISTRIBUTED_COPY_BYTES);
}

/**
 * Runs the copy of `items` as apps/distcp.ts on the cluster, the files dealt out to the maps by size;
 * its output (a line per file copied) goes to a hidden directory of the block store, removed after.
 */
async function distributedCopy(
  items: readonly CopyItem[],
  source: string,
  destination: string,
  options: CopyOptions,
): Promise<{ id: string; maps: number }> {
  const client = await options.client();
  const maps = Math.max(1, Math.min(items.length, options.maps ?? DEFAULT_COPY_MAPS));
  const splits: CopyItem[][] = Array.from({ length: maps }, () => []);
  const load = new Array<number>(maps).fill(0);
  for (const item of [...items].sort((a, b) => b.bytes - a.bytes)) {
    const least = load.indexOf(Math.min(...load));
    splits[least]!.push(item);
    load[least]! += item.bytes;
  }
  // A block-store end is the cluster's own WebHDFS, as this user (delegation token), in the tasks.
  const web = client.url.replace(/^ws/, 'http');
  const blockStoreSettings = async (): Promise<StoreConf> => ({
    'webhdfs.token': await client.delegationToken(),
    ...(web.startsWith('https:') ? { 'webhdfs.tls': 'true' } : {}),
  });
  const viaWebHdfs = (uri: string): string => (isExternalUri(uri) ? uri : `webhdfs://${new URL(web).host}${uri}`);
  const settingsOf = async (uri: string): Promise<StoreConf> =>
    isExternalUri(uri) ? options.conf : await blockStoreSettings();
  const log = `/.distcp-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const id = await client.submit(DISTCP_MODULE, {
    output: log,
    reducers: 0,
    params: {
      // A block-store file's version is the block store's own, not WebHDFS's; its files are written once.
      splits: splits.map((split) =>
        split.map((i) => ({
          ...i,
          src: viaWebHdfs(i.src),
          dst: viaWebHdfs(i.dst),
          version: isExternalUri(i.src) ? i.version : '',
        })),
      ),
      from: await settingsOf(source),
      to: await settingsOf(destination),
      overwrite: options.overwrite,
    },
  });
  try {
    await client.waitForCompletion(id);
  } finally {
    await client.fs.remove(log, { recursive: true }).catch(() => undefined);
  }
  return { id, maps };
}

const DISTCP_MODULE = fileURLToPath(new URL('../../../apps/distcp.js', import.meta.url));

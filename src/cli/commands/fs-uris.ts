/**
 * `minimr fs` on locations outside the block store (file://, s3://, webhdfs://) and `fs cp` between
 * any two stores. The block store is read and written through the client's FsClient, every other
 * store through its Store (src/storage/stores); both are seen here as a `CopyEnd`, the part of a
 * store a copy needs. A copy streams each file (memory bounded by the stores' own buffers) and
 * makes it visible only when whole, as every store's `create` does.
 */
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

/**
 * `fs cp SRC DST`: a file, or a directory's tree, from any store to any other. Into DST when it is an
 * existing directory (keeping the source's name), as cp -r and hdfs dfs -cp do; an existing file is
 * refused (EEXIST) unless `overwrite`. Returns the files and bytes copied.
 */
export async function copyBetweenStores(
  source: string,
  destination: string,
  options: { overwrite: boolean; conf: StoreConf; client: () => Promise<JobClient> },
): Promise<{ files: number; bytes: number }> {
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
  const done = { files: 0, bytes: 0 };
  const copyFile = async (src: string, dst: string): Promise<void> => {
    const writer = await to.create(dst, { overwrite: options.overwrite });
    try {
      for await (const chunk of from.readRange(src, 0, Number.POSITIVE_INFINITY)) {
        await writer.write(chunk);
        done.bytes += chunk.length;
      }
      await writer.close();
      done.files++;
    } catch (err) {
      await writer.abort().catch(() => undefined);
      throw err;
    }
  };
  const copyTree = async (src: string, dst: string): Promise<void> => {
    await to.mkdir(dst);
    for (const entry of await from.list(src)) {
      const child = childOf(dst, nameOf(entry.uri));
      if (entry.type === 'dir') await copyTree(entry.uri, child);
      else await copyFile(entry.uri, child);
    }
  };
  if (st.type === 'file') await copyFile(source, target);
  else await copyTree(source, target);
  return done;
}

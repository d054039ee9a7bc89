/**
 * The `file:///path` store: a directory every worker can read at the same path (a shared or network
 * filesystem, or one machine's disk for a local cluster), through node:fs.
 *
 * A file's version is its modification time (ns) and length: a read given a version checks it before
 * reading and again at the end, so a file rewritten during a job fails the job (ECHANGED) instead of
 * mixing two versions. `create` writes a hidden temporary file beside the target and renames it into
 * place on close, so readers never see half a file.
 *
 * The output committer stages a job's output in a hidden sibling directory `<parent>/.<name>.minimr-JOB`:
 * attempts write `_temporary/<attempt>/<part>` there; the job commit moves each committed part into the
 * staging directory, writes `_SUCCESS` (a JSON manifest of the parts), moves an old output aside (with
 * overwrite) and renames the staging directory onto the output: one rename, atomic on POSIX
 * filesystems, so the output appears whole or not at all. Every step can run again after a crash;
 * `abortJob` removes the staging directory and leaves the output as it was.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { MinimrError } from '../../errors.js';
import {
  type CommitOptions,
  type OutputCommitter,
  type PartWriter,
  type PendingPart,
  type Store,
  type StoreStatus,
  type StoreWriter,
  stopIfCancelled,
} from './types.js';
import { attemptsDirOf, checkedStagedPath, stagedPartPath, stagingDirOf } from './staging.js';
import { parseStoreUri } from './uri.js';

const SUCCESS_NAME = '_SUCCESS';

function pathOf(uri: string): string {
  const location = parseStoreUri(uri);
  if (location.scheme !== 'file') throw new MinimrError('EBADPATH', `${uri} is not a file:// URI`, { path: uri });
  return location.path;
}

const uriOf = (path: string): string => `file://${path}`;

function versionOf(s: Stats): string {
  return `${s.mtimeMs}-${s.size}`;
}

/** node:fs's errors as the store's: ENOENT, EEXIST, ENOTEMPTY, ENOTDIR keep their codes; others are ESTORE. */
function storeError(err: unknown, uri: string, what: string): MinimrError {
  if (err instanceof MinimrError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  const message = `${what} ${uri}: ${(err as Error).message}`;
  switch (code) {
    case 'ENOENT':
      return new MinimrError('ENOENT', `${uri}: no such file or directory`, { path: uri });
    case 'EEXIST':
    case 'ENOTEMPTY':
    case 'ENOTDIR':
    case 'EISDIR':
      return new MinimrError(code, message, { path: uri });
    case 'EACCES':
    case 'EPERM':
      // Tasks read file:// inputs in their sandbox, as the worker's task account where it has one.
      return new MinimrError(
        'EPERM',
        `${message} (the workers' task processes must be able to read it: make it readable by others)`,
        { path: uri },
      );
    case 'ENOSPC':
      return new MinimrError('EDISKFULL', message, { path: uri });
    default:
      return new MinimrError('ESTORE', message, { path: uri, cause: code });
  }
}

async function guarded<T>(uri: string, what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    throw storeError(err, uri, what);
  }
}

function statusOf(path: string, s: Stats): StoreStatus {
  return {
    uri: uriOf(path),
    type: s.isDirectory() ? 'dir' : 'file',
    length: s.isDirectory() ? 0 : s.size,
    mtime: Math.round(s.mtimeMs),
    version: versionOf(s),
  };
}

/** A writer of `path` through a hidden temporary sibling, renamed onto it by `finish`. */
class TemporaryFileWriter {
  private handle: FileHandle | undefined;
  readonly temporary: string;
  bytes = 0;

  constructor(private readonly path: string) {
    this.temporary = posix.join(
      posix.dirname(path),
      `.${posix.basename(path)}.minimr-tmp-${randomBytes(6).toString('hex')}`,
    );
  }

  async start(): Promise<void> {
    await guarded(uriOf(this.path), 'cannot create', async () => {
      await mkdir(posix.dirname(this.path), { recursive: true });
      this.handle = await open(this.temporary, 'wx');
    });
  }

  async write(data: Buffer): Promise<void> {
    await guarded(uriOf(this.path), 'cannot write', async () => {
      let done = 0;
      while (done < data.length) done += (await this.handle!.write(data, done)).bytesWritten;
    });
    this.bytes += data.length;
  }

  async finish(target: string, overwrite: boolean): Promise<void> {
    await guarded(uriOf(target), 'cannot finish', async () => {
      await this.handle!.sync();
      await this.handle!.close();
      this.handle = undefined;
      if (!overwrite && (await exists(target))) {
        await rm(this.temporary, { force: true });
        throw new MinimrError('EEXIST', `${uriOf(target)} already exists`, { path: uriOf(target) });
      }
      await rename(this.temporary, target);
    });
  }

  async abort(): Promise<void> {
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
    await rm(this.temporary, { force: true });
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

export class FileStore implements Store {
  readonly scheme = 'file' as const;

  stat(uri: string): Promise<StoreStatus> {
    const path = pathOf(uri);
    return guarded(uri, 'cannot stat', async () => statusOf(path, await stat(path)));
  }

  list(uri: string): Promise<StoreStatus[]> {
    const path = pathOf(uri);
    return guarded(uri, 'cannot list', async () => {
      const s = await stat(path);
      if (!s.isDirectory()) return [statusOf(path, s)];
      const names = (await readdir(path)).sort();
      const entries: StoreStatus[] = [];
      for (const name of names) {
        const child = posix.join(path, name);
        try {
          entries.push(statusOf(child, await stat(child)));
        } catch (err) {
          // Removed between the listing and its stat: not there.
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        }
      }
      return entries;
    });
  }

  async *readRange(uri: string, start: number, end: number, version?: string): AsyncIterable<Buffer> {
    const path = pathOf(uri);
    const check = async (): Promise<void> => {
      const now = versionOf(await guarded(uri, 'cannot read', () => stat(path)));
      if (now !== version)
        throw new MinimrError('ECHANGED', `${uri} changed while the job read it (version ${version}, now ${now})`, {
          path: uri,
        });
    };
    if (version !== undefined) await check();
    if (end <= start) return;
    const stream = createReadStream(path, { start, end: end - 1, highWaterMark: 1 << 20 });
    try {
      for await (const chunk of stream) yield chunk as Buffer;
    } catch (err) {
      throw storeError(err, uri, 'cannot read');
    } finally {
      stream.destroy();
    }
    if (version !== undefined) await check();
  }

  async create(uri: string, options: { overwrite?: boolean } = {}): Promise<StoreWriter> {
    const path = pathOf(uri);
    if (!options.overwrite && (await guarded(uri, 'cannot stat', () => exists(path))))
      throw new MinimrError('EEXIST', `${uri} already exists`, { path: uri });
    const writer = new TemporaryFileWriter(path);
    await writer.start();
    return {
      write: (data) => writer.write(data),
      close: () => writer.finish(path, options.overwrite === true),
      abort: () => writer.abort(),
    };
  }

  mkdir(uri: string): Promise<void> {
    const path = pathOf(uri);
    return guarded(uri, 'cannot make directory', async () => {
      await mkdir(path, { recursive: true });
    });
  }

  remove(uri: string, options: { recursive?: boolean } = {}): Promise<void> {
    const path = pathOf(uri);
    return guarded(uri, 'cannot remove', async () => {
      const s = await stat(path);
      if (s.isDirectory() && !options.recursive && (await readdir(path)).length > 0)
        throw new MinimrError('ENOTEMPTY', `${uri} is a directory that is not empty (remove it recursively)`, {
          path: uri,
        });
      await rm(path, { recursive: s.isDirectory() });
    });
  }

  outputCommitter(outputUri: string, jobId: string): OutputCommitter {
    return new FileOutputCommitter(pathOf(outputUri), jobId);
  }
}

class FileOutputCommitter implements OutputCommitter {
  private readonly staging: string;
  private readonly aside: string;

  constructor(
    private readonly output: string,
    jobId: string,
  ) {
    if (output === '/')
      throw new MinimrError('EBADPATH', 'file:/// cannot be an output location', { path: 'file:///' });
    this.staging = stagingDirOf(output, jobId);
    this.aside = `${this.staging}-replaced`;
  }

  async setupJob(options: { overwrite: boolean }): Promise<void> {
    const uri = uriOf(this.output);
    await guarded(uri, 'cannot prepare the output', async () => {
      if (!options.overwrite && (await exists(this.output)))
        throw new MinimrError(
          'EOUTPUTEXISTS',
          `output path ${uri} already exists; remove it or submit with --overwrite`,
          { path: uri },
        );
      // Made here, not found: a directory (or link) someone made beforehand under this job's name is refused.
      await mkdir(posix.dirname(this.staging), { recursive: true });
      await mkdir(this.staging);
      await mkdir(attemptsDirOf(this.staging));
    });
  }

  async createPart(attemptId: string, partName: string): Promise<PartWriter> {
    const path = stagedPartPath(this.staging, attemptId, partName);
    const writer = new TemporaryFileWriter(path);
    await writer.start();
    return {
      write: (data) => writer.write(data),
      close: async () => {
        await writer.finish(path, true);
        return { name: partName, bytes: writer.bytes, commit: { path } };
      },
      abort: () => writer.abort(),
    };
  }

  async commitJob(parts: readonly PendingPart[], options?: CommitOptions): Promise<void> {
    const uri = uriOf(this.output);
    await guarded(uri, 'cannot commit the output', async () => {
      if (!(await exists(this.staging))) {
        // A commit that ran before renamed the staging directory onto the output.
        if (await exists(posix.join(this.output, SUCCESS_NAME))) {
          await rm(this.aside, { recursive: true, force: true });
          return;
        }
        throw new MinimrError('ENOENT', `the staging directory of ${uri} is gone`, { path: uri });
      }
      for (const part of parts) {
        stopIfCancelled(options, uri);
        const from = checkedStagedPath(this.staging, part);
        const to = posix.join(this.staging, part.name);
        if (await exists(from)) await rename(from, to);
        else if (!(await exists(to))) throw new MinimrError('ENOENT', `the part ${part.name} of ${uri} is gone`);
      }
      await rm(attemptsDirOf(this.staging), { recursive: true, force: true });
      const manifest = { parts: parts.map((p) => ({ name: p.name, bytes: p.bytes })) };
      await writeFile(posix.join(this.staging, SUCCESS_NAME), `${JSON.stringify(manifest)}\n`);
      stopIfCancelled(options, uri);
      if (await exists(this.output)) await rename(this.output, this.aside);
      await rename(this.staging, this.output);
      await rm(this.aside, { recursive: true, force: true });
    });
  }

  async abortJob(): Promise<void> {
    await guarded(uriOf(this.output), 'cannot remove the staging of', () =>
      rm(this.staging, { recursive: true, force: true }),
    );
  }

  /** The commit renamed the staging directory onto the output: one here again is a straggler's. */
  async cleanupJob(): Promise<void> {
    await this.abortJob();
  }
}

export function createFileStore(): FileStore {
  return new FileStore();
}

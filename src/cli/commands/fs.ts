/**
 * `minimr fs fsck | put | get | getmerge | cat | tail | ls | du | mv | chmod | chown | rm | stat |
 * mkdir`: the block store, with the verbs and behaviour of `hdfs dfs` (a directory `get` copies the
 * tree; `put -` reads stdin; `mv` into a directory keeps the name).
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { basename, join as joinLocal, resolve as resolvePath } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MinimrError } from '../../errors.js';
import type { JobClient } from '../../runtime/index.js';
import {
  formatFsck,
  formatMode,
  isExternalUri,
  joinPath,
  normaliseLocation,
  parseMode,
  type FileStatus,
} from '../../storage/index.js';
import type { Argv } from 'yargs';
import {
  catUri,
  copyBetweenStores,
  DISTRIBUTED_COPY_BYTES,
  DISTRIBUTED_COPY_FILES,
  listUri,
  storeConfOfPairs,
} from './fs-uris.js';
import { escapeControlCharacters, formatBytes, parseSize } from '../../util/index.js';
import { withClient } from '../client.js';
import { defineGroup, jobtrackerOption } from '../options.js';

/** `hdfs dfs -tail` shows the last kilobyte. */
const TAIL_BYTES = 1024;

/** The local file's size, or a one-line error naming it (it is the user's path, not the store's). */
async function localFileSize(path: string): Promise<number> {
  try {
    const st = await stat(path);
    if (!st.isFile()) throw new MinimrError('EISDIR', `local ${path} is not a file (fs put copies one file)`);
    return st.size;
  } catch (err) {
    if (err instanceof MinimrError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new MinimrError('ENOENT', `no local file ${path} (give - to read stdin)`);
    throw new MinimrError('EBADPATH', `cannot read local file ${path}: ${code ?? (err as Error).message}`);
  }
}

/** Bytes of every file of `files`, in order, as one stream (one pipeline: no listener per file). */
async function* concatenated(client: JobClient, files: readonly string[]): AsyncGenerator<Buffer> {
  for (const f of files) yield* client.fs.cat(f);
}

/** The files of a directory (not its subdirectories), by name, or the file itself. */
async function filesOf(client: JobClient, path: string): Promise<string[]> {
  const st = await client.fs.stat(path);
  if (st.type === 'file') return [path];
  return (await client.fs.list(path))
    .filter((f) => f.type === 'file')
    .map((f) => f.path)
    .sort();
}

/** Whether a local path exists, and as what. */
async function localKind(path: string): Promise<'file' | 'dir' | undefined> {
  const st = await stat(path).catch(() => undefined);
  return st === undefined ? undefined : st.isDirectory() ? 'dir' : 'file';
}

/**
 * Copies a stored file or tree to a local path, into it (keeping the name) when it is a directory,
 * as hdfs dfs -get and cp -r do; a local file already there is refused unless `overwrite`.
 */
async function getTree(client: JobClient, source: string, local: string, overwrite: boolean): Promise<number> {
  const target = (await localKind(local)) === 'dir' ? joinLocal(local, basename(source)) : local;
  return copyOut(client, await client.fs.stat(source), target, overwrite);
}

async function copyOut(client: JobClient, entry: FileStatus, local: string, overwrite: boolean): Promise<number> {
  if (entry.type === 'file') {
    const kind = await localKind(local);
    if (kind === 'dir') throw new MinimrError('EISDIR', `local ${local} is a directory`);
    if (kind === 'file' && !overwrite) throw new MinimrError('EEXIST', `local ${local} exists (-f replaces it)`);
    await client.fs.get(entry.path, local);
    return 1;
  }
  await mkdir(local, { recursive: true });
  let files = 0;
  for (const child of await client.fs.list(entry.path))
    files += await copyOut(client, child, joinLocal(local, basename(child.path)), overwrite);
  return files;
}

/** Bytes under a path: a file's length, a directory's files' lengths summed through its tree. */
async function bytesUnder(client: JobClient, entry: FileStatus): Promise<number> {
  if (entry.type === 'file') return entry.length;
  let total = 0;
  for (const child of await client.fs.list(entry.path)) total += await bytesUnder(client, child);
  return total;
}

/** `mv SRC DST`: into DST when it is a directory, keeping the name (as mv and hdfs dfs -mv do). */
async function moveTarget(client: JobClient, source: string, destination: string): Promise<string> {
  const st = await client.fs.stat(destination).catch((err: unknown) => {
    if ((err as MinimrError).code === 'ENOENT') return undefined;
    throw err;
  });
  return st?.type === 'dir' ? joinPath(destination, basename(source)) : destination;
}

function formatEntry(f: FileStatus, ownerWidth: number, groupWidth: number): string {
  return (
    `${formatMode(f.type, f.mode)} ${String(f.replication).padStart(2)} ${f.owner.padEnd(ownerWidth)} ` +
    `${f.group.padEnd(groupWidth)} ${String(f.length).padStart(12)} ${new Date(f.mtime).toISOString()} ` +
    `${escapeControlCharacters(f.path)}\n`
  );
}

/** `--conf key=value`: settings of the store a URI names (s3.endpoint, webhdfs.user, ...). */
function storeConfOption<T>(y: Argv<T>) {
  return y.option('conf', {
    type: 'string',
    array: true,
    alias: 'c',
    describe: 'store setting key=value for URIs, e.g. s3.endpoint=http://host:port (repeatable)',
  });
}

export const fsCommand = defineGroup({
  command: 'fs',
  describe:
    'the block store and other stores: put | get | getmerge | cat | tail | ls | cp | du | mv | rm | stat | mkdir | chmod | chown | fsck',
  builder: (y) =>
    jobtrackerOption(y)
      .command(
        'fsck [path]',
        'check the block store as HDFS fsck does: files, blocks, ' +
          'replicas, under-replicated and missing blocks (exit 1 when any ' +
          'is missing)',
        (yy) =>
          yy
            .positional('path', { type: 'string', default: '/' })
            .option('blocks', { type: 'boolean', default: false, describe: 'list every block with its replicas' }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const report = await c.fsck(String(argv.path));
            process.stdout.write(`${formatFsck(report, argv.blocks)}\n`);
            if (!report.healthy) process.exitCode = 1;
          });
        },
      )
      .command(
        'put <local> <path>',
        'copy a local file (- for stdin) into the block store',
        (yy) =>
          yy
            .positional('local', { type: 'string', demandOption: true })
            .positional('path', { type: 'string', demandOption: true })
            .option('overwrite', { type: 'boolean', default: false, alias: 'f' })
            .option('replication', { type: 'number' })
            .option('block-size', { type: 'string' }),
        async (argv) => {
          // yargs reads a lone `-` as the empty string.
          const fromStdin = argv.local === '-' || (argv.local === '' && process.argv.includes('-'));
          if (!fromStdin) await localFileSize(argv.local);
          await withClient(argv, async (c) => {
            const started = Date.now();
            const options = {
              overwrite: argv.overwrite,
              replication: argv.replication,
              blockSize: argv['block-size'] ? parseSize(argv['block-size']) : undefined,
            };
            let size: number;
            if (fromStdin) {
              const writer = await c.fs.createWriter(argv.path, options);
              try {
                for await (const chunk of process.stdin as AsyncIterable<Buffer>) await writer.write(chunk);
              } catch (err) {
                await writer.abort();
                throw err;
              }
              size = (await writer.close()).length;
            } else size = (await c.fs.put(resolvePath(argv.local), argv.path, options)).length;
            process.stderr.write(`put ${formatBytes(size)} in ${((Date.now() - started) / 1000).toFixed(2)} s\n`);
          });
        },
      )
      .command(
        'get <path> <local>',
        'copy a file or a directory tree out of the block store (into LOCAL when it is a directory)',
        (yy) =>
          yy
            .positional('path', { type: 'string', demandOption: true })
            .positional('local', { type: 'string', demandOption: true })
            .option('force', { type: 'boolean', alias: 'f', default: false, describe: 'replace local files' }),
        async (argv) => {
          await withClient(argv, (c) => getTree(c, argv.path, resolvePath(argv.local), argv.force));
        },
      )
      .command(
        'getmerge <path> <local>',
        "concatenate a directory's files (a job's part files), by name, into one local file",
        (yy) =>
          yy
            .positional('path', { type: 'string', demandOption: true })
            .positional('local', { type: 'string', demandOption: true })
            .option('nl', { type: 'boolean', default: false, describe: 'add a newline after each file' }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const files = await filesOf(c, argv.path);
            const local = resolvePath(argv.local);
            async function* merged(): AsyncGenerator<Buffer> {
              for (const f of files) {
                yield* c.fs.cat(f);
                if (argv.nl) yield Buffer.from('\n');
              }
            }
            try {
              await pipeline(Readable.from(merged()), createWriteStream(local));
            } catch (err) {
              await rm(local, { force: true });
              throw err;
            }
          });
        },
      )
      .command(
        'cat <path>',
        "print a file, or a directory's files (a path or a file://, s3://, webhdfs:// URI)",
        (yy) => storeConfOption(yy.positional('path', { type: 'string', demandOption: true })),
        async (argv) => {
          const path = normaliseLocation(argv.path);
          if (isExternalUri(path)) {
            await pipeline(Readable.from(catUri(path, storeConfOfPairs(argv.conf))), process.stdout, { end: false });
            return;
          }
          await withClient(argv, async (c) => {
            const files = await filesOf(c, path);
            await pipeline(Readable.from(concatenated(c, files)), process.stdout, { end: false });
          });
        },
      )
      .command(
        'tail <path>',
        `print a file's last ${TAIL_BYTES} bytes`,
        (yy) =>
          yy
            .positional('path', { type: 'string', demandOption: true })
            .option('bytes', { type: 'number', alias: 'c', default: TAIL_BYTES, describe: 'how many bytes' }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const st = await c.fs.stat(argv.path);
            if (st.type !== 'file') throw new MinimrError('EISDIR', `${argv.path} is a directory: tail reads a file`);
            const start = Math.max(0, st.length - Math.max(0, argv.bytes));
            await pipeline(Readable.from(c.fs.readRange(argv.path, start, st.length)), process.stdout, { end: false });
          });
        },
      )
      .command(
        'cp <source> <destination>',
        'copy a file or a tree between any two stores (paths of the block store, file://, s3://, webhdfs:// URIs)',
        (yy) =>
          storeConfOption(
            yy
              .positional('source', { type: 'string', demandOption: true })
              .positional('destination', { type: 'string', demandOption: true })
              .option('overwrite', { type: 'boolean', alias: 'f', default: false, describe: 'replace existing files' })
              .option('distributed', {
                type: 'boolean',
                describe:
                  'copy with a map-only job on the cluster (Hadoop DistCp); default: when a large tree ' +
                  `(${DISTRIBUTED_COPY_FILES} files or ${DISTRIBUTED_COPY_BYTES >> 20} MiB) goes to or from the block store; ` +
                  '--no-distributed copies here',
              })
              .option('maps', { type: 'number', describe: 'maps of a distributed copy (default 20)' }),
          ),
        async (argv) => {
          const conf = storeConfOfPairs(argv.conf);
          const mode = argv.distributed === undefined ? 'auto' : argv.distributed ? 'distributed' : 'local';
          if (argv.maps !== undefined && !(Number.isInteger(argv.maps) && argv.maps > 0))
            throw new MinimrError('EUSAGE', `--maps ${argv.maps}: give a positive whole number`);
          const copy = (client: () => Promise<JobClient>) =>
            copyBetweenStores(argv.source, argv.destination, {
              overwrite: argv.overwrite,
              conf,
              client,
              mode,
              ...(argv.maps !== undefined ? { maps: argv.maps } : {}),
            });
          const done =
            isExternalUri(argv.source) && isExternalUri(argv.destination) && mode !== 'distributed'
              ? await copy(() => Promise.reject(new MinimrError('EINTERNAL', 'no block store in this copy')))
              : await withClient(argv, (c) => copy(async () => c));
          const how = done.job ? ` with job ${done.job.id} (${done.job.maps} maps)` : '';
          process.stderr.write(`copied ${done.files} file(s), ${done.bytes} bytes${how}\n`);
        },
      )
      .command(
        'mv <path> <destination>',
        'move or rename a file or directory (into DESTINATION when it is a directory)',
        (yy) =>
          yy
            .positional('path', { type: 'string', demandOption: true })
            .positional('destination', { type: 'string', demandOption: true }),
        async (argv) => {
          await withClient(argv, async (c) => c.fs.rename(argv.path, await moveTarget(c, argv.path, argv.destination)));
        },
      )
      .command(
        'du [path]',
        'bytes under each entry of a directory (under the path itself with -s)',
        (yy) =>
          yy
            .positional('path', { type: 'string', default: '/' })
            .option('summary', { type: 'boolean', alias: 's', default: false, describe: 'one total for the path' })
            .option('human', { type: 'boolean', alias: 'h', default: false, describe: 'sizes in KiB, MiB, GiB' })
            .option('json', { type: 'boolean', default: false, describe: 'print JSON' }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const path = String(argv.path);
            const st = await c.fs.stat(path);
            const entries = argv.summary || st.type === 'file' ? [st] : await c.fs.list(path);
            const rows: Array<{ path: string; bytes: number }> = [];
            for (const e of entries) rows.push({ path: e.path, bytes: await bytesUnder(c, e) });
            if (argv.json) {
              process.stdout.write(`${JSON.stringify(rows)}\n`);
              return;
            }
            const size = (n: number) => (argv.human ? formatBytes(n) : String(n));
            const width = Math.max(4, ...rows.map((r) => size(r.bytes).length));
            process.stdout.write(`${'SIZE'.padStart(width)}  PATH\n`);
            for (const r of rows)
              process.stdout.write(`${size(r.bytes).padStart(width)}  ${escapeControlCharacters(r.path)}\n`);
          });
        },
      )
      .command(
        'ls [path]',
        'list a directory (a path or a file://, s3://, webhdfs:// URI)',
        (yy) =>
          storeConfOption(
            yy
              .positional('path', { type: 'string', default: '/' })
              .option('json', { type: 'boolean', default: false, describe: 'print JSON' }),
          ),
        async (argv) => {
          const path = normaliseLocation(String(argv.path));
          if (isExternalUri(path)) {
            const entries = await listUri(path, storeConfOfPairs(argv.conf));
            if (argv.json) {
              process.stdout.write(`${JSON.stringify(entries)}\n`);
              return;
            }
            process.stdout.write(`Found ${entries.length} item${entries.length === 1 ? '' : 's'}\n`);
            for (const e of entries)
              process.stdout.write(
                `${e.type === 'dir' ? 'd' : '-'} ${String(e.length).padStart(12)} ` +
                  `${e.mtime > 0 ? new Date(e.mtime).toISOString() : '-'.padEnd(24)} ${escapeControlCharacters(e.uri)}\n`,
              );
            return;
          }
          await withClient(argv, async (c) => {
            const entries = await c.fs.list(path);
            if (argv.json) {
              process.stdout.write(`${JSON.stringify(entries)}\n`);
              return;
            }
            const ownerWidth = Math.max(0, ...entries.map((f) => f.owner.length));
            const groupWidth = Math.max(0, ...entries.map((f) => f.group.length));
            // As hdfs dfs -ls heads its table.
            process.stdout.write(`Found ${entries.length} item${entries.length === 1 ? '' : 's'}\n`);
            for (const f of entries) process.stdout.write(formatEntry(f, ownerWidth, groupWidth));
          });
        },
      )
      .command(
        'chmod <mode> <path>',
        "set a path's mode bits, octal (755, 1777 for a sticky directory); its owner or the admin",
        (yy) =>
          yy
            .positional('mode', { type: 'string', demandOption: true })
            .positional('path', { type: 'string', demandOption: true }),
        async (argv) => {
          const mode = parseMode(argv.mode);
          await withClient(argv, (c) => c.fs.chmod(argv.path, mode));
        },
      )
      .command(
        'chown <owner> <path>',
        'give a path another owner (OWNER, OWNER:GROUP or :GROUP); the admin only',
        (yy) =>
          yy
            .positional('owner', { type: 'string', demandOption: true })
            .positional('path', { type: 'string', demandOption: true })
            .option('recursive', { type: 'boolean', alias: 'R', default: false }),
        async (argv) => {
          const [owner, group] = argv.owner.includes(':') ? argv.owner.split(':', 2) : [argv.owner, ''];
          await withClient(argv, (c) =>
            c.fs.chown(argv.path, owner || null, group || null, { recursive: argv.recursive }),
          );
        },
      )
      .command(
        'rm <path>',
        'remove a file or (with -r) a directory',
        (yy) =>
          yy
            .positional('path', { type: 'string', demandOption: true })
            .option('recursive', { type: 'boolean', alias: 'r', default: false }),
        async (argv) => {
          await withClient(argv, (c) => c.fs.remove(argv.path, { recursive: argv.recursive }));
        },
      )
      .command(
        'stat <path>',
        "show a file's blocks and replicas",
        (yy) =>
          yy
            .positional('path', { type: 'string', demandOption: true })
            .option('json', { type: 'boolean', default: false, describe: 'print JSON: the status and its blocks' }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const st = await c.fs.stat(argv.path);
            if (argv.json) {
              // Without their access tokens: a token is a credential to read the block, not information.
              const blocks =
                st.type === 'file' ? (await c.fs.getBlocks(argv.path)).map(({ token: _token, ...b }) => b) : [];
              process.stdout.write(`${JSON.stringify({ ...st, blocks })}\n`);
              return;
            }
            process.stdout.write(`${JSON.stringify(st)}\n`);
            if (st.type === 'file') {
              for (const b of await c.fs.getBlocks(argv.path)) {
                process.stdout.write(
                  `  ${b.blockId} offset ${b.offset} length ${b.length} ` +
                    `crc32 ${b.crc32.toString(16)} ` +
                    `on ${b.locations.map((l) => `${l.workerId}(${l.rack})`).join(', ')}\n`,
                );
              }
            }
          });
        },
      )
      .command(
        'mkdir <path>',
        'make a directory',
        (yy) =>
          yy
            .positional('path', { type: 'string', demandOption: true })
            .option('parents', { type: 'boolean', alias: 'p', default: false }),
        async (argv) => {
          await withClient(argv, (c) => c.fs.mkdir(argv.path, { parents: argv.parents }));
        },
      )
      .demandCommand(1),
});

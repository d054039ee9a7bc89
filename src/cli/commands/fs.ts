/** `minimr fs fsck | put | get | cat | ls | chmod | chown | rm | stat | mkdir`: the block store. */
import { stat } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { formatFsck, formatMode, parseMode } from '../../storage/index.js';
import { escapeControlCharacters, formatBytes, parseSize } from '../../util/index.js';
import { withClient } from '../client.js';
import { defineGroup, jobtrackerOption } from '../options.js';

export const fsCommand = defineGroup({
  command: 'fs',
  describe: 'the block store: put | get | cat | ls | rm | stat | mkdir | chmod | chown | fsck',
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
        'copy a local file into the block store',
        (yy) =>
          yy
            .positional('local', { type: 'string', demandOption: true })
            .positional('path', { type: 'string', demandOption: true })
            .option('overwrite', { type: 'boolean', default: false, alias: 'f' })
            .option('replication', { type: 'number' })
            .option('block-size', { type: 'string' }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const size = (await stat(argv.local)).size;
            const started = Date.now();
            await c.fs.put(resolvePath(argv.local), argv.path, {
              overwrite: argv.overwrite,
              replication: argv.replication,
              blockSize: argv['block-size'] ? parseSize(argv['block-size']) : undefined,
            });
            process.stderr.write(`put ${formatBytes(size)} in ${((Date.now() - started) / 1000).toFixed(2)} s\n`);
          });
        },
      )
      .command(
        'get <path> <local>',
        'copy a file out of the block store',
        (yy) =>
          yy
            .positional('path', { type: 'string', demandOption: true })
            .positional('local', { type: 'string', demandOption: true }),
        async (argv) => {
          await withClient(argv, (c) => c.fs.get(argv.path, resolvePath(argv.local)));
        },
      )
      .command(
        'cat <path>',
        'print a file',
        (yy) => yy.positional('path', { type: 'string', demandOption: true }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const st = await c.fs.stat(argv.path);
            const files =
              st.type === 'dir'
                ? (await c.fs.list(argv.path)).filter((f) => f.type === 'file').map((f) => f.path)
                : [argv.path];
            for (const f of files) await pipeline(Readable.from(c.fs.cat(f)), process.stdout, { end: false });
          });
        },
      )
      .command(
        'ls [path]',
        'list a directory',
        (yy) => yy.positional('path', { type: 'string', default: '/' }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const entries = await c.fs.list(String(argv.path));
            const ownerWidth = Math.max(0, ...entries.map((f) => f.owner.length));
            const groupWidth = Math.max(0, ...entries.map((f) => f.group.length));
            for (const f of entries) {
              process.stdout.write(
                `${formatMode(f.type, f.mode)} ${String(f.replication).padStart(2)} ${f.owner.padEnd(ownerWidth)} ${f.group.padEnd(groupWidth)} ${String(f.length).padStart(12)} ${new Date(f.mtime).toISOString()} ${escapeControlCharacters(f.path)}\n`,
              );
            }
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
        (yy) => yy.positional('path', { type: 'string', demandOption: true }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const st = await c.fs.stat(argv.path);
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

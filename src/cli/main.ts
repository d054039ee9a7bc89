import { mkdir as mkdirLocal, readFile as readFileLocal, stat as statLocal, writeFile as writeFileLocal } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import type { JsonValue } from '../api/index.js';
import { MinimrError } from '../errors.js';
import {
  ATTEMPT_LOG_STREAMS,
  DEFAULT_LOG_READ_BYTES,
  JobClient,
  MAX_LOG_READ_BYTES,
  profileJob,
  profileMarkdown,
  profileSvg,
  parseConfPairs,
  type JobConf,
  type JobStatus,
} from '../runtime/index.js';
import { webPassword } from '../runtime/auth.js';
import { formatMode, parseMode } from '../storage/index.js';
import { commandOf, configFor, configPathOf, readConfigFile } from './config.js';
import { escapeControlCharacters, formatBytes, parseSize } from '../util/index.js';
import { DEFAULT_JOBTRACKER, peerSecurity, withClient, type ClusterArgs } from './client.js';
import { fsckCommand, mrcCommands } from './mrc-commands.js';
import { benchCommand } from './commands/bench.js';
import { jobtrackerCommand } from './commands/jobtracker.js';
import { localCommand } from './commands/local.js';
import { simCommand } from './commands/sim.js';
import { workerCommand } from './commands/worker.js';
import { printCounters, printStatus, progressPrinter } from './job-output.js';
import { parseParams } from './options.js';


/** How the job's tasks were planned: from the profile of its name, or regular. */
function printProfileUse(s: JobStatus): void {
  const p = s.profile;
  if (p.state === 'none') process.stdout.write(`  profile: none (first run of ${s.name}): tasks run regular\n`);
  else if (p.state === 'rejected') process.stdout.write(`  profile: not usable (${p.reason}): tasks run regular\n`);
  else {
    for (const [kind, f] of [['map', p.map], ['reduce', p.reduce]] as const) {
      if (!f) continue;
      const rate = f.diskMBps !== undefined ? `disk ${f.diskMBps} MB/s fitted` : "the worker's disk rate";
      process.stdout.write(`  profile ${kind}: ideal ${f.idealDurationMs} ms, needs ${f.neededMemoryMb} MB, penalty ${f.penalty}${f.penalty === 'spill' ? ` (${rate})` : ''}, from ${f.attempts} attempts\n`);
    }
  }
  if (s.elasticAttempts > 0) process.stdout.write(`  elastic attempts: ${s.elasticAttempts} (granted less than ideal memory; see \`minimr job attempts\`)\n`);
}

async function main(): Promise<void> {
  const args = hideBin(process.argv);
  const configPath = configPathOf(args);
  const config = configPath !== undefined ? configFor(await readConfigFile(configPath), commandOf(args)) : {};
  await yargs(args)
    .scriptName('minimr')
    .usage('$0 <command> [options]')
    .option('secret-file', { type: 'string', describe: 'the cluster secret file (default: $MINIMR_SECRET_FILE; a cluster this user started here is found by itself)' })
    .option('user', { type: 'string', describe: 'the user to act as (default: $MINIMR_USER, else the OS user)' })
    .option('tls-ca', { type: 'string', describe: 'certificate authority to trust for a wss:// JobTracker (PEM; default: $MINIMR_TLS_CA)' })
    .option('config', { type: 'string', global: true, describe: 'JSON file of options by command ({"worker": {"rack": "/r1"}, ...}); flags on the command line win' })
    .config(config)
    .command(localCommand)
    .command(simCommand)
    .command(jobtrackerCommand)
    .command(workerCommand)
    .command(
      'submit <module>',
      'submit a job module (.js or .ts) and follow it',
      (y) =>
        y
          .positional('module', { type: 'string', demandOption: true })
          .option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER })
          .option('input', { type: 'string', array: true, alias: 'i' })
          .option('output', { type: 'string', alias: 'o', demandOption: true })
          .option('param', { type: 'string', array: true, alias: 'p', describe: 'job parameter key=value (repeatable)' })
          .option('reducers', { type: 'number', alias: 'r' })
          .option('overwrite', { type: 'boolean', default: false })
          .option('pool', { type: 'string' })
          .option('weight', { type: 'number', describe: 'share inside the pool relative to its other jobs (FAIR)' })
          .option('mr-cluster', { type: 'string', describe: 'run on this MR-cluster (FAWKES); input and output under /mrc/NAME/' })
          .option('conf', { type: 'string', array: true, alias: 'c', describe: 'job setting key=value, e.g. shuffle.map.bufferBytes=16m (repeatable)' })
          .option('wait', { type: 'boolean', default: true, describe: 'follow the job until it ends (--no-wait to return at once)' }),
      async (argv) => {
        await withClient(argv, async (client) => {
          const jobId = await client.submit(resolvePath(argv.module), {
            input: argv.input,
            output: argv.output,
            params: parseParams(argv.param),
            reducers: argv.reducers,
            overwrite: argv.overwrite,
            pool: argv.pool,
            weight: argv.weight,
            ...(argv['mr-cluster'] !== undefined ? { mrCluster: argv['mr-cluster'] } : {}),
            conf: parseConfPairs(argv.conf),
          });
          if (!argv.wait) {
            process.stdout.write(`${jobId}\n`);
            return;
          }
          const status = await client.waitForCompletion(jobId, { onProgress: progressPrinter(jobId) });
          printStatus(status);
          printCounters(status);
        });
      },
    )
    .command(
      'profile <module>',
      'elasticity profile: one map and one reduce at ideal memory and at fractions of it; fits T(m) = T + spilled(m)/diskRate',
      (y) =>
        y
          .positional('module', { type: 'string', demandOption: true })
          .option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER })
          .option('input', { type: 'string', array: true, alias: 'i', demandOption: true })
          .option('param', { type: 'string', array: true, alias: 'p' })
          .option('conf', { type: 'string', array: true, alias: 'c' })
          .option('fractions', { type: 'string', default: '1,0.75,0.5,0.25,0.1', describe: 'memory fractions of ideal' })
          .option('maps', { type: 'number', default: 1, describe: 'map tasks per run (their output is the reducer input)' })
          .option('out', { type: 'string', default: 'bench-results', describe: 'local directory for profile-<job>.{json,md,svg}' }),
      async (argv) => {
        const fractions = argv.fractions.split(',').map(Number);
        if (fractions.some((f) => !(f > 0 && f <= 1))) throw new MinimrError('EBADJOB', `--fractions must be numbers in (0, 1], got ${argv.fractions}`);
        const profile = async (client: JobClient) => {
          const result = await profileJob(client, {
            modulePath: resolvePath(argv.module),
            input: argv.input,
            workDir: `/tmp/minimr-profile-${process.pid}`,
            params: parseParams(argv.param),
            conf: parseConfPairs(argv.conf),
            fractions,
            maps: argv.maps,
            onProgress: (m) => process.stderr.write(`profile: ${m}\n`),
          });
          const base = resolvePath(argv.out, `profile-${result.job.replace(/\.[cm]?[jt]s$/, '')}`);
          await mkdirLocal(resolvePath(argv.out), { recursive: true });
          await writeFileLocal(`${base}.json`, JSON.stringify(result, null, 2));
          await writeFileLocal(`${base}.md`, `${profileMarkdown(result)}\n`);
          await writeFileLocal(`${base}.svg`, profileSvg(result));
          process.stdout.write(`${profileMarkdown(result)}\n\nwrote ${base}.{json,md,svg}\n`);
        };
        await withClient(argv, profile);
      },
    )
    .command('profiles', 'profiles of recurring jobs kept by the JobTracker: list | show | import | rm', (y) =>
      y
        .option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER })
        .command('list', 'list the profiles', (yy) => yy, async (argv) => {
          await withClient(argv, async (c) => {
            for (const p of await c.profiles()) {
              const attempts = (b: readonly { attempts: number }[]) => Math.round(b.reduce((n, x) => n + x.attempts, 0));
              const sizes = (b: readonly { bufferMiB: number }[]) => b.map((x) => x.bufferMiB).join(',') || '-';
              process.stdout.write(
                `${p.job}  runs ${p.runs}  imports ${p.imports}  maps ${attempts(p.map)} at buffers ${sizes(p.map)} MiB  reduces ${attempts(p.reduce)} at ${sizes(p.reduce)} MiB  updated ${new Date(p.updatedAt).toISOString()}\n`,
              );
            }
          });
        })
        .command('show <job>', "print a job's profile (JSON)", (yy) => yy.positional('job', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            const [p] = await c.profiles(argv.job);
            if (!p) throw new MinimrError('ENOENT', `no profile of a job named ${argv.job} (see \`minimr profiles list\`)`);
            process.stdout.write(`${JSON.stringify(p, null, 2)}\n`);
          });
        })
        .command(
          'import <file>',
          'add a `minimr profile` result (profile-JOB.json) to the profile of its job',
          (yy) =>
            yy
              .positional('file', { type: 'string', demandOption: true })
              .option('job', { type: 'string', describe: "the job's name (defineJob's `name`); default: the one the profile recorded" }),
          async (argv) => {
            let parsed: unknown;
            try {
              parsed = JSON.parse(await readFileLocal(resolvePath(argv.file), 'utf8'));
            } catch (err) {
              throw new MinimrError('EBADCONF', `cannot read the profile ${argv.file}: ${(err as Error).message}`);
            }
            if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new MinimrError('EBADCONF', `${argv.file} is not a \`minimr profile\` result (a JSON object)`);
            const named = (parsed as { jobName?: unknown }).jobName;
            const job = argv.job ?? (typeof named === 'string' ? named : undefined);
            if (!job) throw new MinimrError('EBADCONF', `${argv.file} does not say which job it profiles: give --job NAME (the name in its defineJob)`);
            await withClient(argv, async (c) => {
              const p = await c.importProfile(job, parsed as Record<string, JsonValue>);
              process.stdout.write(`profile of ${p.job}: ${p.runs} runs, ${p.imports} imports\n`);
            });
          },
        )
        .command('rm <job>', "forget a job's profile (its next run is regular)", (yy) => yy.positional('job', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            if (!(await c.removeProfile(argv.job))) throw new MinimrError('ENOENT', `no profile of a job named ${argv.job}`);
          });
        })
        .demandCommand(1),
    )
    .command('job', 'job status | attempts | logs | list | kill', (y) =>
      y
        .option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER })
        .command('status <id>', 'show a job', (yy) => yy.positional('id', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            const s = await c.status(argv.id);
            printStatus(s);
            printProfileUse(s);
            printCounters(s);
          });
        })
        .command('attempts <id>', 'list a job\'s attempts with their workers, times and counters', (yy) => yy.positional('id', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            for (const a of await c.attempts(argv.id)) {
              const ms = a.finishTime ? a.finishTime - a.startTime : undefined;
              const pick = (k: string) => (a.counters[k] !== undefined ? ` ${k}=${a.counters[k]}` : '');
              process.stdout.write(
                `${a.attemptId} ${a.state.padEnd(9)} ${a.workerId} ${ms ?? '-'} ms ${a.memoryMb} MB${a.elastic ? ` elastic (ideal ${a.idealMemoryMb} MB)` : ''}${pick('SPILLED_BYTES')}${pick('MERGE_PASSES')}${pick('PEAK_RSS_BYTES')}${a.error ? ` ${a.error.code}: ${a.error.message}` : ''}\n`,
              );
            }
          });
        })
        .command(
          'logs <attempt>',
          "print an attempt's stdout and stderr, read from the worker that ran it (the last 64 KiB of each by default)",
          (yy) =>
            yy
              .positional('attempt', { type: 'string', demandOption: true })
              .option('stream', { choices: ['stdout', 'stderr', 'both'] as const, default: 'both' as const })
              .option('offset', { type: 'number', describe: 'start at this byte (default: the tail)' })
              .option('length', { type: 'number', describe: `bytes to read, at most ${MAX_LOG_READ_BYTES} (default ${DEFAULT_LOG_READ_BYTES})` }),
          async (argv) => {
            await withClient(argv, async (c) => {
              const streams = argv.stream === 'both' ? ATTEMPT_LOG_STREAMS : [argv.stream];
              for (const stream of streams) {
                const slice = await c.attemptLog(argv.attempt, stream, { ...(argv.offset !== undefined ? { offset: argv.offset } : {}), ...(argv.length !== undefined ? { length: argv.length } : {}) });
                const end = slice.offset + Buffer.byteLength(slice.text);
                if (streams.length > 1) process.stdout.write(`==> ${stream} of ${slice.attemptId} on ${slice.workerId} (bytes ${slice.offset}-${end} of ${slice.size}) <==\n`);
                else if (slice.offset > 0 || end < slice.size) process.stderr.write(`bytes ${slice.offset}-${end} of ${slice.size} (--offset and --length read the rest)\n`);
                process.stdout.write(slice.text);
                if (streams.length > 1 && slice.text !== '' && !slice.text.endsWith('\n')) process.stdout.write('\n');
              }
            });
          },
        )
        .command(
          'list',
          'list jobs: running, queued and recently ended (--all: and the retired ones, from the history)',
          (yy) => yy.option('all', { type: 'boolean', default: false, describe: 'include jobs retired from memory to the history' }),
          async (argv) => {
            await withClient(argv, async (c) => (await c.list(argv.all)).forEach(printStatus));
          },
        )
        .command('kill <id>', 'kill a job', (yy) => yy.positional('id', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => printStatus(await c.kill(argv.id)));
        })
        .demandCommand(1),
    )
    .command('mrc', 'MR-clusters (FAWKES): activate | list | deactivate', mrcCommands)
    .command(
      'web-password',
      "print the password of the JobTracker's web pages and /metrics (HTTP Basic, any user name), derived from the cluster secret",
      (y) => y.option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER }),
      async (argv) => {
        const { credentials } = await peerSecurity(argv);
        if (!credentials) throw new MinimrError('EAUTH', `no cluster secret for ${argv.jobtracker}: give --secret-file (or $MINIMR_SECRET_FILE)`);
        process.stdout.write(`${webPassword(credentials.secret)}\n`);
      },
    )
    .command('fs', 'the block store: put | get | cat | ls | rm | stat | mkdir | chmod | chown | fsck', (y) =>
      fsckCommand(y.option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER }))
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
              const size = (await statLocal(argv.local)).size;
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
          (yy) => yy.positional('path', { type: 'string', demandOption: true }).positional('local', { type: 'string', demandOption: true }),
          async (argv) => {
            await withClient(argv, (c) => c.fs.get(argv.path, resolvePath(argv.local)));
          },
        )
        .command('cat <path>', 'print a file', (yy) => yy.positional('path', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            const st = await c.fs.stat(argv.path);
            const files = st.type === 'dir' ? (await c.fs.list(argv.path)).filter((f) => f.type === 'file').map((f) => f.path) : [argv.path];
            for (const f of files) await pipeline(Readable.from(c.fs.cat(f)), process.stdout, { end: false });
          });
        })
        .command('ls [path]', 'list a directory', (yy) => yy.positional('path', { type: 'string', default: '/' }), async (argv) => {
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
        })
        .command(
          'chmod <mode> <path>',
          "set a path's mode bits, octal (755, 1777 for a sticky directory); its owner or the admin",
          (yy) => yy.positional('mode', { type: 'string', demandOption: true }).positional('path', { type: 'string', demandOption: true }),
          async (argv) => {
            const mode = parseMode(argv.mode);
            await withClient(argv, (c) => c.fs.chmod(argv.path, mode));
          },
        )
        .command(
          'chown <owner> <path>',
          'give a path another owner (OWNER, OWNER:GROUP or :GROUP); the admin only',
          (yy) => yy.positional('owner', { type: 'string', demandOption: true }).positional('path', { type: 'string', demandOption: true }).option('recursive', { type: 'boolean', alias: 'R', default: false }),
          async (argv) => {
            const [owner, group] = argv.owner.includes(':') ? argv.owner.split(':', 2) : [argv.owner, ''];
            await withClient(argv, (c) => c.fs.chown(argv.path, owner || null, group || null, { recursive: argv.recursive }));
          },
        )
        .command(
          'rm <path>',
          'remove a file or (with -r) a directory',
          (yy) => yy.positional('path', { type: 'string', demandOption: true }).option('recursive', { type: 'boolean', alias: 'r', default: false }),
          async (argv) => {
            await withClient(argv, (c) => c.fs.remove(argv.path, { recursive: argv.recursive }));
          },
        )
        .command('stat <path>', 'show a file\'s blocks and replicas', (yy) => yy.positional('path', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            const st = await c.fs.stat(argv.path);
            process.stdout.write(`${JSON.stringify(st)}\n`);
            if (st.type === 'file') {
              for (const b of await c.fs.getBlocks(argv.path)) {
                process.stdout.write(`  ${b.blockId} offset ${b.offset} length ${b.length} crc32 ${b.crc32.toString(16)} on ${b.locations.map((l) => `${l.workerId}(${l.rack})`).join(', ')}\n`);
              }
            }
          });
        })
        .command(
          'mkdir <path>',
          'make a directory',
          (yy) => yy.positional('path', { type: 'string', demandOption: true }).option('parents', { type: 'boolean', alias: 'p', default: false }),
          async (argv) => {
            await withClient(argv, (c) => c.fs.mkdir(argv.path, { parents: argv.parents }));
          },
        )
        .demandCommand(1),
    )
    .command(benchCommand)
    .demandCommand(1)
    .strict()
    .help()
    .fail((msg, err, y) => {
      if (err) throw err;
      const fromConfig = configPath !== undefined && /^Unknown argument/.test(msg) ? ` (an option in ${configPath}'s "${commandOf(args)}" section or on the command line that this command does not have)` : '';
      process.stderr.write(`${y.help()}\n\n${msg}${fromConfig}\n`);
      process.exit(2);
    })
    .parseAsync();
}

main().catch((err: unknown) => {
  if (err instanceof MinimrError) {
    process.stderr.write(`minimr: ${err.code}: ${escapeControlCharacters(err.message)}\n`);
    process.exit(1);
  }
  process.stderr.write(`minimr: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});


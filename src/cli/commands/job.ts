/** `minimr job status | attempts | logs | list | kill`: the jobs of a running cluster. */
import {
  ATTEMPT_LOG_STREAMS,
  DEFAULT_LOG_READ_BYTES,
  MAX_LOG_READ_BYTES,
  type JobStatus,
} from '../../runtime/index.js';
import { escapeTerminalControls } from '../../util/index.js';
import { withClient } from '../client.js';
import { printCounters, printJobTable, printJson, printStatus, printTable, printUserStack } from '../job-output.js';
import { defineGroup, jobtrackerOption } from '../options.js';

/** How the job's tasks were planned: from the profile of its name, or regular. */
function printProfileUse(s: JobStatus): void {
  const p = s.profile;
  if (p.state === 'none') process.stdout.write(`  profile: none (first run of ${s.name}): tasks run regular\n`);
  else if (p.state === 'rejected') process.stdout.write(`  profile: not usable (${p.reason}): tasks run regular\n`);
  else {
    for (const [kind, f] of [
      ['map', p.map],
      ['reduce', p.reduce],
    ] as const) {
      if (!f) continue;
      const rate = f.diskMBps !== undefined ? `disk ${f.diskMBps} MB/s fitted` : "the worker's disk rate";
      process.stdout.write(
        `  profile ${kind}: ideal ${f.idealDurationMs} ms, ` +
          `needs ${f.neededMemoryMb} MB, ` +
          `penalty ${f.penalty}${f.penalty === 'spill' ? ` (${rate})` : ''}, ` +
          `from ${f.attempts} attempts\n`,
      );
    }
  }
  if (s.elasticAttempts > 0)
    process.stdout.write(
      `  elastic attempts: ${s.elasticAttempts} (granted less than ideal memory; see \`minimr job attempts\`)\n`,
    );
}

const jsonOption = { type: 'boolean', default: false, describe: 'print JSON' } as const;

export const jobCommand = defineGroup({
  command: 'job',
  describe: 'job status | attempts | logs | list | kill',
  builder: (y) =>
    jobtrackerOption(y)
      .command(
        'status <id>',
        'show a job',
        (yy) => yy.positional('id', { type: 'string', demandOption: true }).option('json', jsonOption),
        async (argv) => {
          await withClient(argv, async (c) => {
            const s = await c.status(argv.id);
            if (argv.json) return printJson(s);
            printStatus(s);
            printUserStack(s.error, '    ');
            printProfileUse(s);
            printCounters(s);
          });
        },
      )
      .command(
        'attempts <id>',
        "list a job's attempts with their workers, times and counters",
        (yy) => yy.positional('id', { type: 'string', demandOption: true }).option('json', jsonOption),
        async (argv) => {
          await withClient(argv, async (c) => {
            const attempts = await c.attempts(argv.id);
            if (argv.json) return printJson(attempts);
            const rows = attempts.map((a) => {
              const ms = a.finishTime ? a.finishTime - a.startTime : Date.now() - a.startTime;
              const pick = (k: string) => (a.counters[k] !== undefined ? ` ${k}=${a.counters[k]}` : '');
              return [
                a.attemptId,
                a.speculative ? `${a.state} (backup)` : a.state,
                a.workerId,
                `${ms} ms`,
                `${a.memoryMb} MB${a.elastic ? ` elastic (ideal ${a.idealMemoryMb} MB)` : ''}`,
                `${pick('SPILLED_BYTES')}${pick('MERGE_PASSES')}${pick('PEAK_RSS_BYTES')}`.trim() +
                  (a.error ? ` ${a.error.code}: ${escapeTerminalControls(a.error.message)}` : ''),
              ];
            });
            printTable(['ATTEMPT', 'STATE', 'WORKER', 'TIME', 'MEMORY', 'COUNTERS / ERROR'], rows, (i) =>
              printUserStack(attempts[i]!.error, '    '),
            );
          });
        },
      )
      .command(
        'logs <attempt>',
        "print an attempt's stdout and stderr, read from the worker that ran it (the last 64 KiB of each by default)",
        (yy) =>
          yy
            .positional('attempt', { type: 'string', demandOption: true })
            .option('stream', { choices: ['stdout', 'stderr', 'both'] as const, default: 'both' as const })
            .option('offset', { type: 'number', describe: 'start at this byte (default: the tail)' })
            .option('length', {
              type: 'number',
              describe: `bytes to read, at most ${MAX_LOG_READ_BYTES} (default ${DEFAULT_LOG_READ_BYTES})`,
            })
            .option('escape', {
              type: 'boolean',
              describe:
                'show control characters (terminal escapes, CR) as \\x1b, \\r... as `cat -v` does, keeping ' +
                'newlines and tabs (default: on a terminal; piped, the bytes as written)',
            }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const streams = argv.stream === 'both' ? ATTEMPT_LOG_STREAMS : [argv.stream];
            // What a task printed may hold escape sequences that would drive the reader's terminal.
            const shown = (argv.escape ?? process.stdout.isTTY === true) ? escapeTerminalControls : (t: string) => t;
            for (const stream of streams) {
              const slice = await c.attemptLog(argv.attempt, stream, {
                ...(argv.offset !== undefined ? { offset: argv.offset } : {}),
                ...(argv.length !== undefined ? { length: argv.length } : {}),
              });
              const end = slice.offset + Buffer.byteLength(slice.text);
              if (streams.length > 1)
                process.stdout.write(
                  `==> ${stream} of ${slice.attemptId} on ${slice.workerId} ` +
                    `(bytes ${slice.offset}-${end} of ${slice.size}) <==\n`,
                );
              else if (slice.offset > 0 || end < slice.size)
                process.stderr.write(
                  `bytes ${slice.offset}-${end} of ${slice.size} (--offset and --length read the rest)\n`,
                );
              process.stdout.write(shown(slice.text));
              if (streams.length > 1 && slice.text !== '' && !slice.text.endsWith('\n')) process.stdout.write('\n');
            }
          });
        },
      )
      .command(
        'list',
        'list jobs: running, queued and recently ended (--all: and the retired ones, from the history)',
        (yy) =>
          yy
            .option('all', {
              type: 'boolean',
              default: false,
              describe: 'include jobs retired from memory to the history',
            })
            .option('json', jsonOption),
        async (argv) => {
          await withClient(argv, async (c) => {
            const jobs = await c.list(argv.all);
            if (argv.json) printJson(jobs);
            else printJobTable(jobs);
          });
        },
      )
      .command(
        'kill <id>',
        'kill a job',
        (yy) => yy.positional('id', { type: 'string', demandOption: true }),
        async (argv) => {
          await withClient(argv, async (c) => printStatus(await c.kill(argv.id)));
        },
      )
      .demandCommand(1),
});

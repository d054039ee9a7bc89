/**
 * `minimr run`: a job on local files, on a throwaway embedded cluster (src/local/run-local.ts): a job
 * module, or with `--mapper` (and `--reducer`, `--combiner`, `--file`, `--cmdenv`) a streaming job
 * as `minimr streaming` submits it.
 */
import { availableParallelism } from 'node:os';
import { runOnLocalFiles } from '../../local/index.js';
import { parseConfPairs } from '../../runtime/index.js';
import { MinimrError } from '../../errors.js';
import { formatBytes, parseSize } from '../../util/index.js';
import { printCounters, progressPrinter } from '../job-output.js';
import { defineCommand, parseParams } from '../options.js';
import { streamingJob, streamingOptionsOf } from './streaming.js';

export const runCommand = defineCommand({
  command: 'run [module]',
  describe:
    'run a job module, or executables as mapper and reducer (--mapper), on local files ' +
    '(a throwaway cluster on this machine) and write its output locally',
  builder: (y) =>
    y
      .positional('module', { type: 'string', describe: 'the job module (.js or .ts); or give --mapper' })
      .option('mapper', { type: 'string', describe: 'a streaming job: command reading lines (as minimr streaming)' })
      .option('reducer', { type: 'string', describe: "the streaming job's reducer command" })
      .option('combiner', { type: 'string', describe: "the streaming job's combiner command" })
      .option('file', { type: 'string', array: true, describe: "file shipped to the commands' working directory" })
      .option('cmdenv', { type: 'string', array: true, describe: "K=V in the commands' environment (repeatable)" })
      .option('input', {
        type: 'string',
        array: true,
        alias: 'i',
        describe: 'local input file or directory tree (repeatable; names starting with _ or . are skipped)',
      })
      .option('output', {
        type: 'string',
        alias: 'o',
        demandOption: true,
        describe: 'local output directory (part files and _SUCCESS)',
      })
      .option('param', { type: 'string', array: true, alias: 'p', describe: 'job parameter key=value (repeatable)' })
      .option('reducers', { type: 'number', alias: 'r' })
      .option('conf', {
        type: 'string',
        array: true,
        alias: 'c',
        describe: 'job setting key=value, e.g. shuffle.map.bufferBytes=16m (repeatable)',
      })
      .option('overwrite', {
        type: 'boolean',
        default: false,
        describe: 'replace an existing output directory (only once the job has succeeded)',
      })
      .option('workers', {
        type: 'number',
        default: availableParallelism(),
        describe: "worker processes (default: this machine's cores)",
      })
      .option('block-size', { type: 'string', describe: 'block size of the input in the block store (default 64m)' }),
  handler: async (argv) => {
    if ((argv.module === undefined) === (argv.mapper === undefined))
      throw new MinimrError('EUSAGE', 'minimr run takes a job module or --mapper (a streaming job), one of the two');
    const reducers = argv.reducers !== undefined ? { reducers: argv.reducers } : {};
    const job =
      argv.mapper !== undefined
        ? await streamingJob(streamingOptionsOf({ ...argv, mapper: argv.mapper })).then((s) => ({
            modulePath: s.modulePath,
            options: { params: s.params, conf: s.conf, streaming: s.streaming, name: s.name, ...reducers },
          }))
        : {
            modulePath: argv.module!,
            options: { params: parseParams(argv.param), conf: parseConfPairs(argv.conf), ...reducers },
          };
    const controller = new AbortController();
    const interrupt = (signal: NodeJS.Signals) => controller.abort(signal);
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    const started = Date.now();
    let jobId = '';
    let printProgress: ReturnType<typeof progressPrinter> | undefined;
    try {
      const result = await runOnLocalFiles(job, argv.input ?? [], argv.output, {
        overwrite: argv.overwrite,
        workers: argv.workers,
        ...(argv['block-size'] !== undefined ? { blockSize: parseSize(argv['block-size']) } : {}),
        signal: controller.signal,
        onProgress: (s) => {
          if (s.jobId !== jobId) [jobId, printProgress] = [s.jobId, progressPrinter(s.jobId)];
          printProgress?.(s);
        },
      });
      printCounters(result.status);
      process.stderr.write(
        `${result.status.name} ${result.status.state} in ${((Date.now() - started) / 1000).toFixed(2)} s ` +
          `(${result.inputFiles} input files, ${formatBytes(result.inputBytes)}, ${argv.workers} workers): ` +
          `${result.files.length} files in ${argv.output}\n`,
      );
    } finally {
      process.removeListener('SIGINT', interrupt);
      process.removeListener('SIGTERM', interrupt);
    }
  },
});

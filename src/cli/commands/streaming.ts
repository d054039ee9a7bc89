/**
 * `minimr streaming`: a Hadoop Streaming job (any executable as mapper, combiner and reducer) submitted
 * to a cluster and followed until it ends. The job is the engine's built-in streaming module
 * (apps/streaming/streaming-job.ts); `streamingJob` turns the options into what is submitted, for
 * `minimr run` too.
 */
import { readFile, stat } from 'node:fs/promises';
import { basename, resolve as resolvePath } from 'node:path';
import type { JsonValue } from '../../api/index.js';
import { MinimrError } from '../../errors.js';
import {
  MAX_STREAMING_FILES_BYTES,
  STREAMING_MODULE_FILE,
  parseConfPairs,
  type JobConf,
  type StreamingFile,
  type StreamingSubmission,
} from '../../runtime/index.js';
import { keyValuePairs } from '../../util/index.js';
import { withClient } from '../client.js';
import { followJob } from '../job-output.js';
import { defineCommand, jobtrackerOption } from '../options.js';

/** What `minimr streaming` (and `minimr run --mapper`) is given. */
export interface StreamingOptions {
  readonly mapper: string;
  readonly reducer?: string;
  readonly combiner?: string;
  /** Local files shipped to the tasks' working directory (`--file`). */
  readonly files?: readonly string[];
  /** `K=V` environment settings of the commands (`--cmdenv`). */
  readonly cmdenv?: readonly string[];
  /** `--conf k=v`: job settings, and `streaming.taskTimeoutMs`. */
  readonly conf?: readonly string[];
  readonly reducers?: number;
}

/** A streaming job as submitted: the module to submit, and what goes with it. */
export interface StreamingJob {
  /** `streaming: MAPPER | REDUCER`, cut to 200 characters: recurring jobs' profiles are kept by name. */
  readonly name: string;
  readonly modulePath: string;
  readonly params: Record<string, JsonValue>;
  readonly conf: JobConf;
  readonly streaming: StreamingSubmission;
}

/** `--conf streaming.taskTimeoutMs=N`: Hadoop's mapreduce.task.timeout for the commands, ms. */
export const STREAMING_TIMEOUT_CONF = 'streaming.taskTimeoutMs';
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Checks streaming options and reads the shipped files; a missing `--file` is EBADPATH naming it. */
export async function streamingJob(options: StreamingOptions): Promise<StreamingJob> {
  if (typeof options.mapper !== 'string' || options.mapper.trim() === '')
    throw new MinimrError('EBADJOB', 'streaming: --mapper needs a command');
  if (options.reducers === 0 && options.reducer !== undefined)
    throw new MinimrError('EBADJOB', 'streaming: --reducer with --reducers 0: a map-only job has no reducer');
  const params: Record<string, JsonValue> = { mapper: options.mapper };
  if (options.reducer !== undefined) params.reducer = options.reducer;
  if (options.combiner !== undefined) params.combiner = options.combiner;
  const cmdenv: Record<string, string> = {};
  for (const [name, value] of keyValuePairs(options.cmdenv, '--cmdenv')) {
    if (!ENV_NAME.test(name))
      throw new MinimrError('EBADJOB', `--cmdenv ${name}: an environment variable name is letters, digits and _`);
    if (name.startsWith('MINIMR_'))
      throw new MinimrError('EBADJOB', `--cmdenv ${name}: MINIMR_* settings never reach a task's commands`);
    cmdenv[name] = value;
  }
  if (Object.keys(cmdenv).length > 0) params.cmdenv = cmdenv;
  const confPairs: string[] = [];
  for (const item of options.conf ?? []) {
    const [key, value] = keyValuePairs([item], '--conf')[0]!;
    if (key !== STREAMING_TIMEOUT_CONF) {
      confPairs.push(item);
      continue;
    }
    const ms = Number(value);
    if (!Number.isInteger(ms) || ms < 1)
      throw new MinimrError(
        'EBADJOB',
        `--conf ${STREAMING_TIMEOUT_CONF} must be a whole number of ms >= 1, got ${value}`,
      );
    params.taskTimeoutMs = ms;
  }
  const commands = [options.mapper, options.combiner, options.reducers === 0 ? undefined : options.reducer];
  const name = `streaming: ${commands.filter((c) => c !== undefined).join(' | ')}`;
  return {
    name: name.length > 200 ? `${name.slice(0, 197)}...` : name,
    modulePath: STREAMING_MODULE_FILE,
    params,
    conf: parseConfPairs(confPairs),
    streaming: { files: await readShippedFiles(options.files ?? []) },
  };
}

async function readShippedFiles(paths: readonly string[]): Promise<StreamingFile[]> {
  const files: StreamingFile[] = [];
  const names = new Map<string, string>();
  let bytes = 0;
  for (const path of paths) {
    const full = resolvePath(path);
    let mode: number;
    try {
      const s = await stat(full);
      if (!s.isFile()) throw new MinimrError('EBADPATH', `--file ${path}: not a regular file`, { path });
      mode = s.mode;
    } catch (err) {
      if (err instanceof MinimrError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      throw new MinimrError(
        'EBADPATH',
        `--file ${path}: ${code === 'ENOENT' ? 'no such file' : `cannot read it (${code ?? (err as Error).message})`}`,
        { path },
      );
    }
    const name = basename(full);
    const other = names.get(name);
    if (other !== undefined)
      throw new MinimrError(
        'EBADPATH',
        `--file ${path} and --file ${other} would both be ${name} in the task's directory`,
        {
          path,
        },
      );
    names.set(name, path);
    const data = await readFile(full);
    bytes += data.length;
    if (bytes > MAX_STREAMING_FILES_BYTES)
      throw new MinimrError(
        'EBADJOB',
        `--file: the shipped files hold more than ${MAX_STREAMING_FILES_BYTES} bytes; put big data in the block ` +
          'store and read it as input',
      );
    files.push({ name, data, executable: (mode & 0o111) !== 0 });
  }
  return files;
}

/** The streaming options of a parsed `minimr streaming` or `minimr run --mapper` command line. */
export function streamingOptionsOf(argv: {
  mapper: string;
  reducer?: string;
  combiner?: string;
  file?: string[];
  cmdenv?: string[];
  conf?: string[];
  reducers?: number;
}): StreamingOptions {
  const { mapper, reducer, combiner, file: files, cmdenv, conf, reducers } = argv;
  return { mapper, reducer, combiner, files, cmdenv, conf, reducers };
}

export const streamingCommand = defineCommand({
  command: 'streaming',
  describe: 'run executables as mapper and reducer (Hadoop Streaming) and follow the job',
  builder: (y) =>
    jobtrackerOption(y)
      .option('input', { type: 'string', array: true, alias: 'i', demandOption: true })
      .option('output', { type: 'string', alias: 'o', demandOption: true })
      .option('mapper', {
        type: 'string',
        demandOption: true,
        describe: 'command (run with /bin/sh -c) reading lines, writing key<TAB>value lines',
      })
      .option('reducer', { type: 'string', describe: 'command reading key<TAB>value lines sorted by key' })
      .option('combiner', { type: 'string', describe: "command run like the reducer on each map's output" })
      .option('file', {
        type: 'string',
        array: true,
        describe: "local file shipped to the tasks' working directory (repeatable)",
      })
      .option('cmdenv', { type: 'string', array: true, describe: "K=V in the commands' environment (repeatable)" })
      .option('reducers', { type: 'number', alias: 'r', describe: 'reduce tasks; 0: map-only (default 1)' })
      .option('overwrite', { type: 'boolean', default: false })
      .option('pool', { type: 'string' })
      .option('name', { type: 'string', describe: 'job name (default: streaming: MAPPER | COMBINER | REDUCER)' })
      .option('conf', {
        type: 'string',
        array: true,
        alias: 'c',
        describe: `job setting key=value, and ${STREAMING_TIMEOUT_CONF} (default 600000) (repeatable)`,
      })
      .option('wait', {
        type: 'boolean',
        default: true,
        describe: 'follow the job until it ends (--no-wait to return at once)',
      }),
  handler: async (argv) => {
    // Files are read, and refused, before anything is sent.
    const job = await streamingJob(streamingOptionsOf(argv));
    await withClient(argv, async (client) => {
      const jobId = await client.submit(job.modulePath, {
        input: argv.input,
        output: argv.output,
        params: job.params,
        reducers: argv.reducers,
        overwrite: argv.overwrite,
        pool: argv.pool,
        conf: job.conf,
        streaming: job.streaming,
        name: argv.name ?? job.name,
      });
      await followJob(client, jobId, argv.wait);
    });
  },
});

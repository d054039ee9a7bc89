/**
 * `minimr run`: a job on local files, as Hadoop's LocalJobRunner or Spark's `local[*]` run one, in
 * one command. A throwaway embedded cluster (LocalCluster: a JobTracker in this process, one worker
 * process per core) in a temporary directory; the local input files are put into its block store,
 * the job runs there as it would on a real cluster, and its part files (and `_SUCCESS`) are copied
 * into the local output directory. The cluster is stopped and its directory removed whatever
 * happens, an interruption (`signal`) included, so nothing is left running and nothing behind.
 *
 * The output is written beside the output directory first and renamed into place when whole: an
 * existing output is refused (EOUTPUTEXISTS) unless `overwrite`, and then replaced only when the
 * job succeeded, as `submit --overwrite` does in the block store.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve as resolvePath, sep } from 'node:path';
import { MinimrError } from '../errors.js';
import { createLogger } from '../log.js';
import type { JobStatus, SubmitOptions } from '../runtime/index.js';
import { isInputName } from '../storage/index.js';
import { LocalCluster } from './local-cluster.js';

/** A job as `submit` takes it: its module and what goes with it; its input and output are local files here. */
export interface LocalJob {
  /** Path of the job module (what `minimr submit MODULE` takes). */
  readonly modulePath: string;
  /** Parameters, settings, reducers and whatever else `submit` passes on (not input, output or overwrite). */
  readonly options?: Omit<SubmitOptions, 'input' | 'output' | 'overwrite'>;
}

export interface LocalRunOptions {
  /** Replace an existing local output (only once the job has succeeded). */
  readonly overwrite?: boolean;
  /** Worker processes (default: the machine's cores, `os.availableParallelism()`). */
  readonly workers?: number;
  /** Block size of the input in the block store, bytes (default 64 MiB, as a cluster's). */
  readonly blockSize?: number;
  /** Called with the job's status as it runs (e.g. the CLI's progress printer). */
  readonly onProgress?: (status: JobStatus) => void;
  /** Aborted: the job is given up, the cluster stopped and everything removed; rejects with EJOBKILLED. */
  readonly signal?: AbortSignal;
  /** Where the temporary directory is made (default `os.tmpdir()`). */
  readonly tempRoot?: string;
}

export interface LocalRunResult {
  readonly status: JobStatus;
  /** The local files written, relative to the output directory, sorted. */
  readonly files: readonly string[];
  /** The local input files the job read. */
  readonly inputFiles: number;
  readonly inputBytes: number;
}

/** A local input: where it is, and where it goes in the block store. */
interface StagedInput {
  readonly local: string;
  readonly remote: string;
  readonly bytes: number;
  /** The job's input path that reads it: the file itself when named alone, else its directory. */
  readonly inputPath: string;
}

/**
 * The files of the local inputs, each put at `/input/K/<its path below input K>`. Names starting
 * with `_` or `.` are skipped at every level, as Hadoop's FileInputFormat skips them.
 */
async function localInputFiles(inputs: readonly string[]): Promise<StagedInput[]> {
  const files: StagedInput[] = [];
  for (const [k, input] of inputs.entries()) {
    const root = resolvePath(input);
    let top: Awaited<ReturnType<typeof stat>>;
    try {
      top = await stat(root);
    } catch (err) {
      throw new MinimrError(
        'ENOINPUT',
        `input ${input} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        { path: input },
      );
    }
    const before = files.length;
    if (top.isFile()) {
      const remote = `/input/${k}/${safeName(basename(root))}`;
      files.push({ local: root, remote, bytes: top.size, inputPath: remote });
    } else if (top.isDirectory()) {
      for (const local of await filesBelow(root)) {
        const remote = `/input/${k}/${relative(root, local).split(sep).map(safeName).join('/')}`;
        files.push({
          local,
          remote,
          bytes: (await stat(local)).size,
          inputPath: remote.slice(0, remote.lastIndexOf('/')),
        });
      }
    } else throw new MinimrError('ENOINPUT', `input ${input} is neither a file nor a directory`, { path: input });
    if (files.length === before)
      throw new MinimrError(
        'ENOINPUT',
        `input directory ${input} has no files (names starting with _ or . are skipped)`,
        {
          path: input,
        },
      );
  }
  return files;
}

/** A local name as a block store path component (which takes any name but `.`, `..` and ones with `/` or NUL). */
function safeName(name: string): string {
  return name.replace(/\0/g, '_');
}

async function filesBelow(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (!isInputName(e.name)) continue;
    const path = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesBelow(path)));
    else if (e.isFile()) out.push(path);
    else if (e.isSymbolicLink()) {
      const target = await stat(path).catch(() => undefined);
      if (target?.isFile()) out.push(path);
      else if (target?.isDirectory()) out.push(...(await filesBelow(path)));
    }
  }
  return out;
}

function isSameOrInside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : `${dir}${sep}`);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Rejects with EJOBKILLED when `signal` aborts. */
function aborted(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () =>
      reject(
        new MinimrError(
          'EJOBKILLED',
          `interrupted${typeof signal?.reason === 'string' ? ` (${signal.reason})` : ''}: the job was given up, ` +
            'its local cluster stopped and its temporary files removed; the output directory is as it was',
        ),
      );
    if (signal?.aborted) fail();
    else signal?.addEventListener('abort', fail, { once: true });
  });
}

/**
 * Runs `job` on the local files `inputs` (files or directory trees) and writes its output into the
 * local directory `output`; see the file's essay.
 */
export async function runOnLocalFiles(
  job: LocalJob,
  inputs: readonly string[],
  output: string,
  options: LocalRunOptions = {},
): Promise<LocalRunResult> {
  const out = resolvePath(output);
  const staged = await localInputFiles(inputs);
  for (const input of inputs) {
    const local = resolvePath(input);
    if (isSameOrInside(out, local) || isSameOrInside(local, out))
      throw new MinimrError(
        'EBADJOB',
        `output ${output} and input ${input} overlap: give an output outside the input`,
        {
          path: output,
        },
      );
  }
  if (!options.overwrite && (await exists(out)))
    throw new MinimrError('EOUTPUTEXISTS', `output ${output} already exists; remove it or run with --overwrite`, {
      path: output,
    });
  const interrupted = aborted(options.signal);
  interrupted.catch(() => undefined);
  const tempDir = await mkdtemp(join(options.tempRoot ?? tmpdir(), 'minimr-run-'));
  let starting: Promise<LocalCluster> | undefined;
  let cluster: LocalCluster | undefined;
  let newOutput: string | undefined;
  try {
    const workers = Math.max(1, options.workers ?? availableParallelism());
    starting = LocalCluster.start({
      dataDir: tempDir,
      workers,
      mapSlots: 1,
      reduceSlots: 1,
      replication: 1,
      heartbeatMs: 100,
      ...(options.blockSize !== undefined ? { blockSize: options.blockSize } : {}),
      // One machine: no need for each worker to measure its disk at start-up.
      diskMBpsOf: () => 100,
      // Warnings are about a cluster that lives for one job (its workers leaving on Ctrl-C, say); errors still show.
      logger: createLogger('run', process.env.MINIMR_LOG_LEVEL ?? 'error'),
      workerLogLevel: process.env.MINIMR_LOG_LEVEL ?? 'error',
    });
    starting.catch(() => undefined);
    cluster = await Promise.race([starting, interrupted]);
    const client = cluster.client;
    for (const file of staged) await Promise.race([client.fs.put(file.local, file.remote), interrupted]);
    // Each directory holding input files is an input path (the JobTracker reads a directory's files, not below).
    const inputPaths = [...new Set(staged.map((f) => f.inputPath))];
    const jobId = await Promise.race([
      client.submit(resolvePath(job.modulePath), { ...job.options, input: inputPaths, output: '/output' }),
      interrupted,
    ]);
    const following = client.waitForCompletion(jobId, {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      reconnectMs: 0,
    });
    following.catch(() => undefined);
    const status = await Promise.race([following, interrupted]);
    await mkdir(dirname(out), { recursive: true });
    // mkdir, not mkdtemp: the output directory gets the mode the umask gives, not 0700.
    newOutput = join(dirname(out), `.${basename(out)}.minimr-run-${randomBytes(6).toString('hex')}`);
    await mkdir(newOutput);
    const files: string[] = [];
    for (const f of await client.fs.list('/output')) {
      if (f.type !== 'file') continue;
      const name = f.path.slice(f.path.lastIndexOf('/') + 1);
      await Promise.race([client.fs.get(f.path, join(newOutput, name)), interrupted]);
      files.push(name);
    }
    if (options.signal?.aborted) await interrupted;
    // Replaced only now that the new output is whole: the old one is moved aside, the new one in.
    if (await exists(out)) {
      const old = `${newOutput}.old`;
      await rename(out, old);
      await rename(newOutput, out);
      await rm(old, { recursive: true, force: true });
    } else await rename(newOutput, out);
    newOutput = undefined;
    return {
      status,
      files: files.sort(),
      inputFiles: staged.length,
      inputBytes: staged.reduce((n, f) => n + f.bytes, 0),
    };
  } finally {
    if (newOutput !== undefined) await rm(newOutput, { recursive: true, force: true });
    // Interrupted while it started: it is stopped once up (a start that fails stops what it started).
    if (cluster === undefined && starting !== undefined) cluster = await starting.catch(() => undefined);
    await cluster?.stop().catch(() => undefined);
    await rm(tempDir, { recursive: true, force: true });
  }
}

import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  codecs,
  type AnyJobDefinition,
  type Codec,
  type JsonObject,
  type JsonValue,
  type MapContext,
  type PrepareContext,
} from '../../api/index.js';
import { MinimrError, deserializeError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { CountMinSketch } from '../../skew/index.js';
import type { InputPlacement } from '../../scheduler/index.js';
import {
  computeSplits,
  DEFAULT_BLOCK_SIZE,
  externalInputFiles,
  externalSplits,
  FsClient,
  isExternalUri,
  isInputName,
  normaliseLocation,
  openExternalStore,
  storeConfOf,
  type FileStatus,
  type FsckReport,
  type InputSplit,
  type StoreConf,
} from '../../storage/index.js';
import type { MrClusterListing, MrClusterRow } from '../jobtracker/index.js';
import { TaskSplitInput } from '../task/input.js';
import { importJobModule, jobModuleHash, readJobModuleSource, storeJobModule, userStackOf } from '../task/index.js';
import {
  CLIENT_PROTOCOL,
  Dispatcher,
  SKEW_CONF_DEFAULTS,
  connectPeer,
  namenodeOverLink,
  stubOf,
  validateJobConf,
  type AttemptLogSlice,
  type AttemptLogStream,
  type PeerSecurity,
  type RpcPeer,
  type Stub,
  type ClientProtocol,
  type AttemptSummary,
  type ClusterInfoResult,
  type JobConf,
  type JobProfile,
  type JobStatus,
  type JobSubmission,
  type SerializedInputFormat,
  type SkewSample,
  type StreamingSubmission,
  type UserCredential,
  type UserListing,
} from '../wire/index.js';

export interface SubmitOptions {
  input?: readonly string[];
  output: string;
  params?: Record<string, JsonValue>;
  /** Overrides the job's own `reducers`. */
  reducers?: number;
  overwrite?: boolean;
  pool?: string;
  /** Share inside the pool relative to its other jobs (FAIR); default 1. */
  weight?: number;
  /** The MR-cluster (FAWKES) to run on; input and output then live under /mrc/NAME/. */
  mrCluster?: string;
  /** The input is a private data set still owed replicas a scheduler may place (see `InputPlacement`). */
  inputPlacement?: InputPlacement;
  maxAttempts?: number;
  /** Job settings such as 'shuffle.map.bufferBytes' (see JobConf). */
  conf?: JobConf;
  /** A streaming job's shipped files (`minimr streaming`): the JobTracker runs it with the streaming module. */
  streaming?: StreamingSubmission;
  /**
   * The job's name instead of its module's: streaming jobs share one module, and a recurring job's
   * profile is kept by name.
   */
  name?: string;
}

export interface WaitOptions {
  /** Called with the job's status every `pollMs` while it runs, and with its final status. */
  onProgress?: (status: JobStatus) => void;
  /** Progress polling interval (default 200 ms); the end itself is not polled for. */
  pollMs?: number;
  /**
   * How long to keep trying to reconnect when the connection to the JobTracker is lost (it may be
   * restarting: its jobs resume), ms; default 120 s, 0 = give up at once.
   */
  reconnectMs?: number;
}

/** The first `records` records of a split, as a map task would read them. */
/** A split the client samples: of the block store, or of another store's file (its version and settings). */
type SampleSplit = Pick<InputSplit, 'path' | 'start' | 'length' | 'fileLength'> & {
  readonly version?: string;
  readonly store?: StoreConf;
};

function sampleInput(
  fs: FsClient,
  split: SampleSplit,
  format: SerializedInputFormat,
  mapIndex: number,
  records: number,
): TaskSplitInput {
  const input = {
    kind: 'file' as const,
    path: split.path,
    start: split.start,
    length: split.length,
    fileLength: split.fileLength,
    ...(split.version !== undefined ? { version: split.version } : {}),
    ...(split.store !== undefined && Object.keys(split.store).length > 0 ? { store: { ...split.store } } : {}),
  };
  return new TaskSplitInput(fs, input, format, mapIndex, undefined, records);
}

/** A job module this client loaded: the job, and the bundle's file and text (to map its stacks). */
interface LoadedJob {
  readonly job: AnyJobDefinition;
  readonly file: string;
  readonly source: string;
}

/**
 * What the user's code run here (`prepare`, a skew sample's `map`) threw, as ETASK at the user's own
 * line; an engine error it passed on stays as it is.
 */
function userCodeError(err: unknown, where: string, file: string, source: string): MinimrError {
  if (err instanceof MinimrError) return err;
  const user = userStackOf(err, file, source);
  const message = err instanceof Error ? err.message : String(err);
  return new MinimrError(
    'ETASK',
    `${where} threw: ${message}${user ? ` (at ${user.at})` : ''}`,
    user ? { at: user.at, stack: user.stack } : {},
    { cause: err },
  );
}

/** A user's handle on a cluster: submit and follow jobs, and use the block store. */
/** Up to the largest block size a user is likely to choose (the default is 64 MiB). */
const CLIENT_HOLD_BYTES = 256 * 1024 * 1024;

export class JobClient {
  readonly fs: FsClient;
  /**
   * Reads for input samples (`ctx.sample` in `prepare`, skew sketches): they stream. Held, a
   * sample's first records came only after their whole block was read and checked: a TeraSort
   * submit sampling 10 splits of 64 MB read 82 MB where 17 MB streamed, and took 350-560 ms where
   * it took 380-480 ms. A sample that stops before its block's end reads those bytes unchecked; it
   * steers split points or a skew sketch, never the bytes of an output.
   */
  private readonly sampleFs: FsClient;
  /** Job modules loaded by this client, by content hash, with the file each was loaded from (for its stacks). */
  private readonly jobs = new Map<string, Promise<LoadedJob>>();
  /** Closed by its user: a lost connection is not made again. */
  private closed = false;
  /** The client link's operations, over the current connection (a lost one is made again). */
  private readonly jobTracker: Stub<ClientProtocol>;

  private constructor(
    private peer: RpcPeer,
    /** The JobTracker's address (ws:// or wss:// host:port), as this client reached it. */
    readonly url: string,
    private readonly options: { readonly logger?: Logger; readonly security?: PeerSecurity },
  ) {
    this.jobTracker = stubOf(CLIENT_PROTOCOL, () => this.peer);
    // The `fs-<operation>` rows of the client link, as the storage layer's NamenodeApi.
    const namenode = namenodeOverLink(() => this.peer);
    // What a client prints or copies out must be right: it holds each block until it matches the NameNode's checksum.
    this.fs = new FsClient({ namenode, holdUnverifiedBytes: CLIENT_HOLD_BYTES });
    this.sampleFs = new FsClient({ namenode });
  }

  /** Bytes this client's input samples read from the block store so far. */
  get sampleBytesRead(): number {
    const { local, rack, offRack } = this.sampleFs.bytesRead;
    return local + rack + offRack;
  }

  private get logger(): Logger | undefined {
    return this.options.logger;
  }

  /**
   * Connects and authenticates (see auth.ts: without `security.credentials`, a JobTracker in this process lends its
   * secret).
   */
  static async connect(url: string, options: { logger?: Logger; security?: PeerSecurity } = {}): Promise<JobClient> {
    return new JobClient(await JobClient.open(url, options), url, options);
  }

  private static open(
    url: string,
    options: { readonly logger?: Logger; readonly security?: PeerSecurity },
  ): Promise<RpcPeer> {
    // A JobTracker sends a client nothing but answers: the client serves no operation.
    return connectPeer(
      url,
      new Dispatcher<RpcPeer>('a client', () => ({ user: '', roles: new Set() })),
      options.logger,
      undefined,
      options.security,
    );
  }

  /** Connects again after the connection was lost, trying for up to `withinMs`. */
  private async reconnect(withinMs: number, lost: MinimrError, jobId: string): Promise<void> {
    const deadline = Date.now() + withinMs;
    let delayMs = 100;
    this.logger?.warn({ url: this.url, err: lost.message }, 'lost the JobTracker connection: reconnecting');
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, Math.min(delayMs, Math.max(0, deadline - Date.now()))));
      delayMs = Math.min(delayMs * 2, 2000);
      if (this.closed) throw lost;
      try {
        this.peer = await JobClient.open(this.url, this.options);
        if (this.closed) this.peer.close(1000, 'client done');
        return;
      } catch (err) {
        if (!(err instanceof MinimrError && err.code === 'ECONNECT')) throw err;
      }
    }
    throw new MinimrError(
      'ECONNECT',
      `lost the JobTracker at ${this.url} and could not reconnect ` +
        `within ${withinMs} ms (${lost.message}); job ${jobId} resumes ` +
        `when it restarts: follow it with \`minimr job status ${jobId}\``,
      { url: this.url, jobId },
    );
  }

  close(): void {
    this.closed = true;
    this.peer.close(1000, 'client done');
  }

  /** Loads the job module here (so a broken module fails now), runs its `prepare`, and submits it. */
  async submit(modulePath: string, options: SubmitOptions): Promise<string> {
    const { name: moduleName, source } = await readJobModuleSource(modulePath);
    const loaded = await this.loadJob(moduleName, source);
    const submission = await this.buildSubmission(loaded, moduleName, source, options);
    const { jobId } = await this.jobTracker['submit-job']({ job: submission });
    return jobId;
  }

  /** The job a module defines, loaded once per content (a client submitting the same module again reuses it). */
  private loadJob(moduleName: string, source: string): Promise<LoadedJob> {
    const hash = jobModuleHash(source);
    let job = this.jobs.get(hash);
    if (!job) {
      job = (async () => {
        const cacheDir = await mkdtemp(join(tmpdir(), 'minimr-client-'));
        try {
          // As Node's loader names it in stacks (its real path), while it exists.
          const file = await realpath(await storeJobModule(source, cacheDir));
          return { job: await importJobModule(file, moduleName), file, source };
        } finally {
          await rm(cacheDir, { recursive: true, force: true });
        }
      })();
      this.jobs.set(hash, job);
      job.catch(() => this.jobs.delete(hash));
    }
    return job;
  }

  private async buildSubmission(
    { job, file, source: bundle }: LoadedJob,
    moduleName: string,
    source: string,
    options: SubmitOptions,
  ): Promise<JobSubmission> {
    const params = options.params ?? {};
    const inputPaths = [...(options.input ?? [])].map((p) => normaliseLocation(p).replace(/\/+$/, '') || '/');
    const reducers = options.reducers ?? job.reducers ?? 1;
    let input: SerializedInputFormat;
    if (job.input.kind === 'generated') {
      const splits = job.input.splits(params);
      if (!Array.isArray(splits))
        throw new MinimrError('EBADJOB', `${moduleName}: generatedInput's splits() must return an array`);
      input = { kind: 'generated', splits };
    } else {
      if (inputPaths.length === 0)
        throw new MinimrError('ENOINPUT', `${job.name} reads files: give at least one --input path`);
      input = job.input.kind === 'fixed' ? { kind: 'fixed', recordLength: job.input.recordLength } : { kind: 'text' };
    }
    const conf = validateJobConf(options.conf);
    const cms = conf['skew.strategy'] === 'cms' && reducers > 0;
    if (cms && options.streaming)
      throw new MinimrError(
        'EBADJOB',
        'skew.strategy "cms" samples the map output in the client, which would run the streaming commands ' +
          'here: use "hash" or "simple" for a streaming job',
      );
    if (cms && job.partition) {
      throw new MinimrError(
        'EBADJOB',
        `${job.name} has its own partition(); skew.strategy "cms" ` +
          `partitions by a sketch row's hash instead: use "simple" or ` +
          `"hash"`,
      );
    }
    let shared: JsonObject = {};
    if (job.prepare) {
      const ctx: PrepareContext<never> = {
        params,
        inputPaths,
        reducers,
        sample: (maxRecords, maxSplits) =>
          this.sample(inputPaths, input, maxRecords, maxSplits, storeConfOf(conf)) as Promise<never[]>,
      };
      try {
        shared = await job.prepare(ctx);
      } catch (err) {
        throw userCodeError(err, `prepare of ${job.name}`, file, bundle);
      }
    }
    let skewSample: SkewSample | undefined;
    if (cms) {
      skewSample = await this.sampleSketch(
        { job, file, source: bundle },
        inputPaths,
        input,
        params,
        shared,
        reducers,
        conf,
      );
    }
    return {
      name: options.name ?? job.name,
      moduleName,
      moduleSource: source,
      inputPaths,
      outputPath: normaliseLocation(options.output),
      overwrite: options.overwrite ?? false,
      reducers,
      params,
      shared,
      input,
      output: job.output ?? { kind: 'text', separator: '\t' },
      pool: options.pool,
      weight: options.weight,
      ...(options.mrCluster !== undefined ? { mrCluster: options.mrCluster } : {}),
      ...(options.inputPlacement ? { inputPlacement: options.inputPlacement } : {}),
      maxAttempts: options.maxAttempts,
      conf: options.conf,
      skewSample,
      ...(options.streaming ? { streaming: options.streaming } : {}),
    };
  }

  /**
   * The count-min sketch of a 'cms' job: the job's own `map` run here on a sample of the input
   * (TeraSort's sampler: records taken evenly from up to `skew.sampleSplits` splits), each emitted
   * record counted by its serialized key and key + value bytes; one sketch per sampled split, merged.
   *
   * Why a sample before the maps rather than a first wave of maps: the sketch must exist before any
   * map writes its output, since the maps partition with the chosen row's hash. A first wave would
   * either be a barrier (the other maps wait for it and for the assignment: the cluster idles for
   * the slowest first-wave map) or have to be re-run. The sample costs one pass over a few splits'
   * first records in the client, tens of ms (the skew benchmark reports it as sampleMs), and does
   * not delay any map. Its limits: the estimate is of the map output before any combiner, and
   * generated input (no input splits) gives an empty sketch (every row ties: row 0, sizes unknown).
   */
  private async sampleSketch(
    { job, file, source }: LoadedJob,
    inputPaths: readonly string[],
    format: SerializedInputFormat,
    params: Record<string, JsonValue>,
    shared: JsonObject,
    reducers: number,
    conf: JobConf,
  ): Promise<SkewSample> {
    const started = performance.now();
    const c = { ...SKEW_CONF_DEFAULTS, ...conf };
    const width = reducers * c['skew.partitionFactor'];
    const sketch = new CountMinSketch(c['skew.sketchDepth'], width);
    const keyCodec = (job.mapKey ?? codecs.text) as Codec<unknown>;
    const valueCodec = (job.mapValue ?? codecs.msgpack()) as Codec<unknown>;
    let inputRecords = 0;
    let outputRecords = 0;
    const { splits, perSplit } = await this.sampleSplits(
      inputPaths,
      format,
      c['skew.sampleRecords'],
      c['skew.sampleSplits'],
      storeConfOf(conf),
    );
    for (const [mapIndex, split] of splits.entries()) {
      const part = new CountMinSketch(sketch.depth, width, sketch.seeds);
      const encoded = (k: Buffer, value: unknown) => {
        part.add(k, k.length + valueCodec.encode(value).length);
        outputRecords++;
      };
      const ctx: MapContext<unknown, unknown> = {
        jobId: 'sample',
        taskId: `sample_m_${mapIndex}`,
        attemptId: `sample_m_${mapIndex}_0`,
        params,
        shared,
        count: () => undefined,
        mapIndex,
        split: { path: split.path, start: split.start, length: split.length },
        emit: (key, value) => encoded(keyCodec.encode(key), value),
        emitKeyBytes: (bytes, start, end, value) => encoded(Buffer.from(bytes.subarray(start, end)), value),
        emitRecordBytes: (bytes, keyStart, keyEnd, valueEnd) =>
          encoded(
            Buffer.from(bytes.subarray(keyStart, keyEnd)),
            valueCodec.decode(Buffer.from(bytes.subarray(keyEnd, valueEnd))),
          ),
      };
      const input = sampleInput(this.sampleFs, split, format, mapIndex, perSplit);
      try {
        // A whole-split map reads the split's first records; `map` gets the same records one by one.
        if (job.mapSplit) await job.mapSplit(input, ctx);
        else for await (const [offset, value] of input.records()) await job.map!(offset, value, ctx);
      } catch (err) {
        throw userCodeError(err, `map of ${job.name} (on the skew sample)`, file, source);
      } finally {
        await input.close();
      }
      if (job.cleanupMap) await job.cleanupMap(ctx);
      inputRecords += input.recordsRead;
      sketch.merge(part);
    }
    return { sketch: sketch.toWire(), sampleMs: performance.now() - started, inputRecords, outputRecords };
  }

  /** Records taken evenly from up to `maxSplits` splits of the input, as TeraSort's sampler does. */
  private async sample(
    paths: readonly string[],
    format: SerializedInputFormat,
    maxRecords: number,
    maxSplits = 10,
    storeConf: StoreConf = {},
  ): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const s of await this.sampleBySplit(paths, format, maxRecords, maxSplits, storeConf)) out.push(...s.values);
    return out.slice(0, maxRecords);
  }

  /** The first records of up to `maxSplits` evenly spaced input splits, about maxRecords in all. */
  private async sampleBySplit(
    paths: readonly string[],
    format: SerializedInputFormat,
    maxRecords: number,
    maxSplits: number,
    storeConf: StoreConf,
  ): Promise<{ offsets: number[]; values: unknown[] }[]> {
    const { splits, perSplit } = await this.sampleSplits(paths, format, maxRecords, maxSplits, storeConf);
    const out: { offsets: number[]; values: unknown[] }[] = [];
    for (const [i, split] of splits.entries()) {
      const input = sampleInput(this.sampleFs, split, format, i, perSplit);
      const taken = { offsets: [] as number[], values: [] as unknown[] };
      try {
        for await (const [offset, v] of input.records()) {
          taken.offsets.push(offset);
          taken.values.push(Buffer.isBuffer(v) ? Buffer.from(v) : v);
        }
      } finally {
        await input.close();
      }
      out.push(taken);
    }
    return out;
  }

  /**
   * Up to `maxSplits` evenly spaced input splits, and how many records to take from each for about maxRecords in all.
   */
  private async sampleSplits(
    paths: readonly string[],
    format: SerializedInputFormat,
    maxRecords: number,
    maxSplits: number,
    storeConf: StoreConf,
  ): Promise<{ splits: SampleSplit[]; perSplit: number }> {
    if (format.kind === 'generated') return { splits: [], perSplit: 0 };
    const files: FileStatus[] = [];
    const splits: SampleSplit[] = [];
    for (const path of paths) {
      if (isExternalUri(path)) {
        const { store, location } = await openExternalStore(path, storeConf);
        for (const file of await externalInputFiles(store, location.uri))
          for (const split of externalSplits(file, DEFAULT_BLOCK_SIZE)) splits.push({ ...split, store: storeConf });
        continue;
      }
      const status = await this.fs.stat(path).catch((err: unknown) => {
        if (err instanceof MinimrError && err.code === 'ENOENT')
          throw new MinimrError('ENOINPUT', `input path ${path} does not exist`, { path });
        throw err;
      });
      if (status.type === 'file') files.push(status);
      else files.push(...(await this.fs.list(path)).filter((c) => c.type === 'file' && isInputName(c.path)));
    }
    for (const f of files) splits.push(...computeSplits(f.path, await this.fs.getBlocks(f.path)));
    if (splits.length === 0) return { splits: [], perSplit: 0 };
    const take = Math.min(maxSplits, splits.length);
    const perSplit = Math.max(1, Math.ceil(maxRecords / take));
    return {
      splits: Array.from({ length: take }, (_, i) => splits[Math.floor((i * splits.length) / take)]!),
      perSplit,
    };
  }

  status(jobId: string): Promise<JobStatus> {
    return this.jobTracker['job-status']({ jobId });
  }

  /** Every attempt of a job with its worker, times and counters. */
  attempts(jobId: string): Promise<AttemptSummary[]> {
    return this.jobTracker['job-attempts']({ jobId });
  }

  /**
   * A slice of an attempt's stdout or stderr (default: its last 64 KiB), which the JobTracker reads from the attempt's
   * worker.
   */
  attemptLog(
    attemptId: string,
    stream: AttemptLogStream,
    range: { offset?: number; length?: number } = {},
  ): Promise<AttemptLogSlice> {
    return this.jobTracker['attempt-log']({ attemptId, stream, ...range });
  }

  /** The jobs in the JobTracker's memory; with `all`, the retired ones from its history too. */
  list(all = false): Promise<JobStatus[]> {
    return this.jobTracker['list-jobs'](all ? { all } : {});
  }

  kill(jobId: string): Promise<JobStatus> {
    return this.jobTracker['kill-job']({ jobId });
  }

  /**
   * Requests MR-cluster `name` with a minimum share of `minNodes` core nodes (and its input copied from `input`); it
   * may wait in the queue (`queued` says why).
   */
  mrcActivate(name: string, minNodes: number, input?: string): Promise<MrClusterRow> {
    return this.jobTracker['mrc-activate']({ name, minNodes, input }) as Promise<MrClusterRow>;
  }

  mrcList(): Promise<MrClusterListing> {
    return this.jobTracker['mrc-list']({}) as Promise<MrClusterListing>;
  }

  /** Deactivates an idle MR-cluster: its namespace is saved under /mrc-saved, then its nodes return to the pool. */
  mrcDeactivate(name: string): Promise<MrClusterRow> {
    return this.jobTracker['mrc-deactivate']({ name }) as Promise<MrClusterRow>;
  }

  /** A WebHDFS delegation token of this client's user, for a job or tool to act as them on /webhdfs/v1. */
  async delegationToken(): Promise<string> {
    return (await this.jobTracker['delegation-token']({})).token;
  }

  /** The block store's health under `path` (`minimr fs fsck`). */
  fsck(path = '/'): Promise<FsckReport> {
    return this.jobTracker.fsck({ path }) as Promise<FsckReport>;
  }

  clusterInfo(): Promise<ClusterInfoResult> {
    return this.jobTracker['cluster-info']({});
  }

  /** The JobTracker's profiles of recurring jobs (all, or the one of `job`: empty when it has none). */
  profiles(job?: string): Promise<JobProfile[]> {
    return this.jobTracker['job-profiles']({ job });
  }

  /** A new credential for user `name` (the admin's): what `minimr user add` writes to a file. */
  addUser(name: string): Promise<UserCredential> {
    return this.jobTracker['user-add']({ name });
  }

  /** The users with credentials, current and revoked (the admin's). */
  users(): Promise<UserListing[]> {
    return this.jobTracker['user-list']({});
  }

  /** Revokes user `name`'s credential (the admin's): its connections close, it can no longer sign in. */
  revokeUser(name: string): Promise<UserListing> {
    return this.jobTracker['user-revoke']({ name });
  }

  /** Adds a `minimr profile` result (its JSON) to the profile of the job named `job`. */
  importProfile(job: string, profile: JsonObject): Promise<JobProfile> {
    return this.jobTracker['import-profile']({ job, profile });
  }

  /** Forgets the profile of `job`; false when there was none. */
  removeProfile(job: string): Promise<boolean> {
    return this.jobTracker['remove-profile']({ job });
  }

  /**
   * Resolves when the job ends, as the JobTracker tells it (a 'wait-job' request answered at the
   * end: no polling delay); rejects with the job's error when it failed or was killed. With
   * `onProgress`, the status is also polled every `pollMs` meanwhile. A lost connection is made
   * again (for up to `reconnectMs`) and the job followed on: a JobTracker restarted on its
   * directory resumes it.
   */
  async waitForCompletion(jobId: string, options: WaitOptions = {}): Promise<JobStatus> {
    for (;;) {
      try {
        return await this.follow(jobId, options);
      } catch (err) {
        if (!(err instanceof MinimrError && err.code === 'ECONNECT') || this.peer.isOpen || this.closed) throw err;
        await this.reconnect(options.reconnectMs ?? 120_000, err, jobId);
      }
    }
  }

  private async follow(jobId: string, options: WaitOptions): Promise<JobStatus> {
    const ended = this.jobTracker['wait-job']({ jobId });
    const onProgress = options.onProgress;
    if (onProgress) {
      const pollMs = options.pollMs ?? 200;
      let done = false;
      const stopped = ended.then(
        () => (done = true),
        () => (done = true),
      );
      while (!done) {
        const status = await this.status(jobId);
        if (done) break;
        onProgress(status);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([stopped, new Promise((r) => (timer = setTimeout(r, pollMs)))]);
        clearTimeout(timer);
      }
    }
    const status = await ended;
    onProgress?.(status);
    if (status.state === 'succeeded') return status;
    const err = status.error
      ? deserializeError(status.error)
      : new MinimrError('EJOBFAILED', `job ${jobId} ${status.state}`);
    throw new MinimrError(status.state === 'killed' ? 'EJOBKILLED' : 'EJOBFAILED', err.message, {
      ...err.details,
      jobId,
    });
  }

  /** Submits and waits. */
  async run(modulePath: string, options: SubmitOptions, wait: WaitOptions = {}): Promise<JobStatus> {
    const jobId = await this.submit(modulePath, options);
    return this.waitForCompletion(jobId, wait);
  }
}

/**
 * One storage interface for a job's inputs and outputs, whatever holds them: minimr's block store,
 * a directory every worker can read (`file://`), S3 or an S3-compatible store (`s3://`), or an HDFS
 * cluster through WebHDFS (`webhdfs://`, `hdfs://`). A job may read from one and write to another.
 *
 * Reads are ranged (a split reads its byte range and, as Hadoop's LineRecordReader, past its end to
 * finish its last record), and pinned to the version of the file that was listed when the job was
 * planned: a file that changes during a job fails the job (ECHANGED) instead of mixing two versions.
 *
 * Output goes through an OutputCommitter, so it appears whole at its final location or not at all:
 * task attempts write parts where no reader looks, a task's part is committed when its attempt is the
 * one that succeeds, and the job commit makes every committed part visible at once with a `_SUCCESS`
 * marker. Stores that rename (block store, file://, WebHDFS) stage the job's output in a hidden
 * directory beside the final one and rename it into place; S3, which cannot rename, uploads each part
 * as a multipart upload and completes the uploads only at job commit (Hadoop's S3A committers' idea),
 * listing them in `_SUCCESS`. An aborted job leaves nothing visible and no open upload.
 *
 * Every operation rejects with a MinimrError: ENOENT for a missing path, ESTORE for a store that
 * cannot be reached (after bounded retries with backoff; details name the URI and the cause), EAUTH
 * for missing or refused credentials (naming the store), ECHANGED for a file whose version changed,
 * EOUTPUTEXISTS for an output location that exists.
 */
import type { JsonValue } from '../../api/json.js';
import { MinimrError } from '../../errors.js';

export type StoreScheme = 'minimr' | 'file' | 's3' | 'webhdfs';

/** A parsed location: `/a/b` and `minimr:///a/b` are the block store; `hdfs://` is read as `webhdfs://`. */
export interface StoreLocation {
  readonly scheme: StoreScheme;
  /** `host:port` of a WebHDFS NameNode, the bucket of S3, '' for the block store and file://. */
  readonly authority: string;
  /** Absolute, normalised POSIX path inside the store ('/' for a bucket's or filesystem's root). */
  readonly path: string;
  /** The location written back as a URI (a block-store path stays a plain path). */
  readonly uri: string;
}

export interface StoreStatus {
  /** The entry's full URI (same form as StoreLocation.uri). */
  readonly uri: string;
  readonly type: 'file' | 'dir';
  readonly length: number;
  /** Last modification, ms since the epoch (0 when the store does not say, as for S3 prefixes). */
  readonly mtime: number;
  /**
   * What identifies this version of the file's bytes: S3's ETag, the modification time and length
   * elsewhere. A read given a version refuses a file whose version differs (ECHANGED).
   */
  readonly version: string;
  /**
   * Hosts holding the bytes, for locality: workers' ids for the block store (per split, see
   * `splitsOf`), none for S3 and WebHDFS, and for file:// none (every worker reads it alike).
   */
  readonly preferredWorkers?: readonly string[];
}

/** A store's configuration as a job carries it (`--conf s3.endpoint=URL` and the like): plain strings. */
export type StoreConf = Readonly<Record<string, string>>;

export interface StoreWriter {
  /** Once it resolves the writer is done with `data` (it copied what it keeps): the caller may reuse it. */
  write(data: Buffer): Promise<void>;
  /** Makes the file whole and visible at its URI (or, for a committer's part, ready to commit). */
  close(): Promise<void>;
  /** Drops what was written; nothing is left visible (or, on S3, open). */
  abort(): Promise<void>;
}

export interface Store {
  readonly scheme: StoreScheme;
  stat(uri: string): Promise<StoreStatus>;
  /** A directory's entries (one level, names starting with _ or . included); a file lists itself. */
  list(uri: string): Promise<StoreStatus[]>;
  /**
   * The bytes [start, end) of a file, in pieces as they arrive; `end` past the file's length reads to
   * its end. With `version`, ECHANGED if the file is no longer that version.
   */
  readRange(uri: string, start: number, end: number, version?: string): AsyncIterable<Buffer>;
  /** A new file (its parents made as needed); visible only once closed. EEXIST unless `overwrite`. */
  create(uri: string, options?: { overwrite?: boolean }): Promise<StoreWriter>;
  mkdir(uri: string): Promise<void>;
  /** Removes a file, or a directory with `recursive` (ENOTEMPTY otherwise); ENOENT if missing. */
  remove(uri: string, options?: { recursive?: boolean }): Promise<void>;
  /** The committer of a job's output at `outputUri`. */
  outputCommitter(outputUri: string, jobId: string): OutputCommitter;
}

/**
 * A task attempt's part, written and closed but not yet visible: what the job commit needs to make it
 * so (the staged path, or S3's upload id and part ETags). Plain JSON: it travels from the task
 * process to the JobTracker in the attempt's done report and is journaled with the job.
 */
export interface PendingPart {
  /** The part file's name in the output (`part-m-00003`). */
  readonly name: string;
  readonly bytes: number;
  readonly commit: JsonValue;
}

export interface PartWriter extends Omit<StoreWriter, 'close'> {
  /** Finishes the part without making it visible. */
  close(): Promise<PendingPart>;
}

export interface CommitOptions {
  /** Whether the job was killed (or failed) while its commit ran. */
  readonly cancelled?: () => boolean;
}

export interface AbortOptions {
  /**
   * Another abort follows: the committer keeps its own records of what the job's attempts started
   * (S3's records and intents), so that the next one still finds what a request already sent by a
   * process killed an instant ago starts after this one.
   */
  readonly keepRecords?: boolean;
}

/** Throws EJOBKILLED when a commit's job has ended meanwhile (CommitOptions.cancelled). */
export function stopIfCancelled(options: CommitOptions | undefined, what: string): void {
  if (options?.cancelled?.())
    throw new MinimrError('EJOBKILLED', `the commit of ${what} stopped: its job ended while it ran`, { uri: what });
}

export interface OutputCommitter {
  /**
   * Before the job runs: EOUTPUTEXISTS if the output location exists and `overwrite` is false (with
   * `overwrite`, the old output stays until the job commits); prepares the job's staging area.
   */
  setupJob(options: { overwrite: boolean }): Promise<void>;
  /** A part written by one task attempt; many attempts of one task may write at once. */
  createPart(attemptId: string, partName: string): Promise<PartWriter>;
  /**
   * Makes exactly `parts` (one per task, the attempts that succeeded) visible at the output
   * location with a `_SUCCESS` manifest listing them, replacing an old output under `overwrite`.
   * Idempotent: after a JobTracker restart it may run again and must finish what was begun.
   * `cancelled` is asked between steps and last just before the point of no return (after which an
   * abort could no longer find what the job wrote): when it answers true the commit stops with
   * EJOBKILLED, and `abortJob` then leaves the output location as it was.
   */
  commitJob(parts: readonly PendingPart[], options?: CommitOptions): Promise<void>;
  /**
   * Drops everything the job wrote: staged parts, attempts' parts still being written (known or
   * not: a killed task's), S3 uploads not completed. Leaves the output location as it was.
   */
  abortJob(options?: AbortOptions): Promise<void>;
  /**
   * After a successful commit: drops what attempts still running at the commit left (a speculative
   * loser or a killed attempt writing its part for a moment after its kill: S3 uploads and their
   * records, a staging directory made again), never the committed output. Safe to run more than once.
   */
  cleanupJob(): Promise<void>;
}

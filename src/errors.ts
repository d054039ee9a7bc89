/**
 * Every error minimr raises on purpose is a MinimrError with a stable `code`: scripts and the
 * JobTracker branch on the code, people read the message. Ids that the JobTracker needs to act
 * (job, task, attempt, map index, block, worker) travel in `details`, so an error that crossed a
 * process or a socket still says what to re-run.
 */
export type MinimrErrorCode =
  | 'ENOINPUT' // input path missing or empty
  | 'EOUTPUTEXISTS' // output path exists and overwrite was not asked for
  | 'EJOBMODULE' // job module does not load or is not a valid job
  | 'EBADJOB' // job definition or submission malformed
  | 'EBADCONF' // cluster, pool, policy, workload or trace configuration malformed
  | 'ENOENT' // path not found in the block store
  | 'EEXIST' // path already exists
  | 'ENOTDIR'
  | 'EISDIR'
  | 'ENOTEMPTY'
  | 'EBADPATH'
  | 'ENOROUTE' // no API operation at that URL
  | 'EMETHOD' // an API operation asked with another HTTP method
  | 'ETOOLARGE' // a request bigger than the server takes
  | 'ECHECKSUM' // data does not match its checksum
  | 'ETOKEN' // a data port request without a valid block access token or shuffle hash
  | 'ENOREPLICA' // no live, valid replica of a block
  | 'ENOWORKERS' // not enough live workers for an operation (e.g. replication)
  | 'EDISKFULL'
  | 'EFETCH' // shuffle fetch failed (details: jobId, mapIndex, reduceIndex)
  | 'ETASK' // user code threw inside a task
  | 'EJOBFAILED'
  | 'EJOBKILLED'
  | 'ENOJOB'
  | 'ENOUSER' // no user of that name has a credential (`minimr user list`)
  | 'EPROTOCOL' // malformed, oversized or unexpected frame
  | 'EVERSION' // protocol version mismatch
  | 'ECONNECT' // cannot reach a JobTracker or worker
  | 'ETIMEOUT'
  | 'EKILLED' // attempt killed on purpose
  | 'EWORKERLOST'
  | 'ENOMRCLUSTER' // job submitted to an MR-cluster that is unknown or being deactivated
  | 'EAUTH' // the connection did not prove the cluster secret or the credential of the user it names
  | 'EPERM' // the user may not do this to another user's job or path
  | 'EBADREQUEST' // a request's arguments are malformed (a log range, an HTTP query)
  | 'ENOATTEMPT' // no such attempt on this JobTracker
  | 'EUSAGE' // a command line the `minimr` command does not understand (exit status 2)
  | 'EBUSY' // a directory or port another process holds (a second cluster in one folder)
  | 'ESTORE' // an external store (file://, s3://, webhdfs://) cannot be reached or refused the operation
  | 'ECHANGED' // an input file changed (another version) while a job read it
  | 'EPOLICY' // a scheduling policy broke the policy contract in a run (details.rule names the rule)
  | 'EINTERNAL';

export type ErrorDetails = Readonly<Record<string, string | number | boolean | undefined>>;

export class MinimrError extends Error {
  readonly code: MinimrErrorCode;
  readonly details: ErrorDetails;

  constructor(code: MinimrErrorCode, message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MinimrError';
    this.code = code;
    this.details = details;
  }

  /** Plain form that survives msgpack and JSON. */
  toJSON(): SerializedError {
    return { code: this.code, message: this.message, details: { ...this.details }, stack: this.stack };
  }
}

export interface SerializedError {
  code: string;
  message: string;
  details?: Record<string, string | number | boolean | undefined>;
  stack?: string;
}

export function serializeError(err: unknown): SerializedError {
  if (err instanceof MinimrError) return err.toJSON();
  if (err instanceof Error) {
    const code =
      typeof (err as NodeJS.ErrnoException).code === 'string'
        ? String((err as NodeJS.ErrnoException).code)
        : 'EINTERNAL';
    return { code, message: err.message, stack: err.stack };
  }
  return { code: 'EINTERNAL', message: String(err) };
}

const KNOWN_CODES = new Set<string>([
  'ENOINPUT',
  'EOUTPUTEXISTS',
  'EJOBMODULE',
  'EBADJOB',
  'EBADCONF',
  'ENOENT',
  'EEXIST',
  'ENOTDIR',
  'EISDIR',
  'ENOTEMPTY',
  'EBADPATH',
  'ECHECKSUM',
  'ETOKEN',
  'ENOREPLICA',
  'ENOWORKERS',
  'EDISKFULL',
  'EFETCH',
  'ETASK',
  'EJOBFAILED',
  'EJOBKILLED',
  'ENOJOB',
  'ENOUSER',
  'EPROTOCOL',
  'EVERSION',
  'ECONNECT',
  'ETIMEOUT',
  'EKILLED',
  'EWORKERLOST',
  'ENOMRCLUSTER',
  'EAUTH',
  'EPERM',
  'EINTERNAL',
  'EPOLICY',
  'EBADREQUEST',
  'ENOATTEMPT',
  'EUSAGE',
  'EBUSY',
  'ENOROUTE',
  'EMETHOD',
  'ETOOLARGE',
  'ESTORE',
  'ECHANGED',
]);

/** Rebuilds a MinimrError on the receiving side of a socket or a process boundary. */
export function deserializeError(e: SerializedError): MinimrError {
  const code = (KNOWN_CODES.has(e.code) ? e.code : 'EINTERNAL') as MinimrErrorCode;
  const err = new MinimrError(code, e.message, e.details ?? {});
  if (e.stack) err.stack = e.stack;
  return err;
}

export function isMinimrError(err: unknown, code?: MinimrErrorCode): err is MinimrError {
  return err instanceof MinimrError && (code === undefined || err.code === code);
}

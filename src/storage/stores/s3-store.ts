/**
 * The `s3://bucket/prefix` store: S3 or any S3-compatible store through the AWS SDK for JavaScript v3.
 *
 * Paths are keys: `s3://b/logs/2026/x.txt` is key `logs/2026/x.txt` of bucket `b`. Directories are key
 * prefixes ending in '/', listed one level at a time with ListObjectsV2's delimiter; `mkdir` writes an
 * empty marker object `dir/` (as Hadoop's S3A does) so an empty directory can exist. A file's version is
 * its ETag, and a ranged read given a version sends it as `If-Match`, so an object overwritten between
 * the listing and the read answers 412 and the read fails with ECHANGED naming it.
 *
 * Writes are memory bounded: bytes are buffered up to one part (8 MiB by default, `s3.partSize`), a file
 * that ends within its first part is one PutObject, a longer one a multipart upload whose parts go up
 * one at a time as the buffer fills (the writer's `write` waits for the upload, which is the back
 * pressure).
 *
 * Output commits without rename (S3 has none), the idea of Hadoop's S3A "magic" committer: each task
 * attempt's part is a multipart upload started at its final key `<out>/part-...`, its parts uploaded as
 * data comes, and closed WITHOUT completing it, so nothing is visible; the PendingPart carries the key,
 * upload id and part ETags. The job commit completes exactly the committed uploads, aborts its other
 * attempts' uploads, removes old objects of an overwritten output that the new output does not have, and
 * writes `_SUCCESS`, a JSON manifest of the parts (name, bytes, ETag).
 *
 * Telling this job's uploads from others': ListMultipartUploads shows keys and upload ids but no
 * metadata, and the final key cannot carry the job id, so each upload is recorded, right after it is
 * started, in a small object `<out>/_minimr-pending/<jobId>/<part>.<attempt>.<hash of upload id>` holding
 * {key, uploadId}. commitJob deletes the records last, so records left mean no commit finished. abortJob
 * aborts the uploads its records name; one already gone was completed by a commit cut short, and its
 * object (which carries the upload's `minimr-job` metadata) is deleted when it is this job's, as is such
 * a commit's `_SUCCESS`; then the records go. A task process killed between starting its upload and
 * writing the record (a job that fails kills its other reduces, often just as they open their parts)
 * leaves an upload no record names; so before it starts the upload an attempt writes an intent,
 * `<out>/_minimr-pending/<jobId>/<part>/<attempt>.intent`, and abortJob and cleanupJob also abort the
 * uploads at an intent's key that no record (of any job) names and that started after the intent.
 * Nothing else is touched. Names starting with '_' are not input to minimr or Hadoop, and EOUTPUTEXISTS
 * disregards `_minimr-pending/`. Two limits: an unrecorded upload at a key another job also has an
 * intent for (two jobs writing one output at once) may be that job's, and is left to the bucket's
 * lifecycle rule AbortIncompleteMultipartUpload, as is one the store starts only after the job's last
 * abort; and an overwrite aborted after its commit began has already replaced the old parts of the
 * same names (S3 cannot put them back).
 *
 * Errors: an endpoint that cannot be reached is ESTORE naming the URI and the cause after the SDK's
 * standard retries (`s3.maxAttempts`, default 3, with its exponential backoff of 100 ms doubling, and a
 * 2 s connect timeout, so a few seconds at most); refused or missing credentials are EAUTH naming the
 * store; NoSuchKey and NoSuchBucket are ENOENT; a failed If-Match is ECHANGED.
 */
import { createHash } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  type ListMultipartUploadsCommandOutput,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { JsonValue } from '../../api/json.js';
import { MinimrError } from '../../errors.js';
import {
  type OutputCommitter,
  type PartWriter,
  type PendingPart,
  type Store,
  type StoreConf,
  type StoreStatus,
  type StoreWriter,
  stopIfCancelled,
} from './types.js';

const MiB = 1024 * 1024;
/** S3's smallest part but the last. */
const MIN_PART_SIZE = 5 * MiB;
const DEFAULT_PART_SIZE = 8 * MiB;
const PENDING_DIR = '_minimr-pending';
/** Ends the name of an intent (see the committer's comment): `<jobId>/<part>/<attempt>.intent`. */
const INTENT_SUFFIX = '.intent';
/**
 * How much earlier than its intent's LastModified an unrecorded upload may say it was initiated and
 * still be the intent's: both are the store's clock, but a store may keep either in whole seconds.
 */
const INTENT_CLOCK_SLACK_MS = 1000;
const SUCCESS_NAME = '_SUCCESS';
/** How many single-object deletes run at once when a commit or a recursive remove deletes many. */
const DELETE_CONCURRENCY = 8;

/** What names an upload in its record's key: the first 16 hex digits of its id's SHA-256. */
function uploadHash(uploadId: string): string {
  return createHash('sha256').update(uploadId).digest('hex').slice(0, 16);
}

/** The part an intent's name (`<part>/<attempt>.intent`, below its job's directory) is of; undefined for a record. */
function intentPart(name: string): string | undefined {
  const slash = name.indexOf('/');
  return slash > 0 && name.endsWith(INTENT_SUFFIX) ? name.slice(0, slash) : undefined;
}

/** Test and embedding hooks; by default credentials come from the SDK's standard chain. */
export interface S3StoreOptions {
  readonly credentials?: S3ClientConfig['credentials'];
}

interface S3Address {
  readonly bucket: string;
  /** The object key, '' for the bucket's root; never starts or ends with '/'. */
  readonly key: string;
  readonly uri: string;
}

/** One uploaded part of a multipart upload, as CompleteMultipartUpload wants it. */
interface UploadedPart {
  readonly n: number;
  readonly etag: string;
}

/** What a PendingPart's `commit` holds on S3. */
interface S3PartCommit {
  readonly key: string;
  readonly uploadId: string;
  readonly parts: readonly UploadedPart[];
}

function parseS3Uri(uri: string): S3Address {
  const match = /^s3a?:\/\/([^/]+)(\/.*)?$/.exec(uri);
  if (!match) throw new MinimrError('EBADPATH', `not an s3:// URI: ${uri}`, { uri });
  const bucket = match[1]!;
  const segments = (match[2] ?? '/').split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..'))
    throw new MinimrError('EBADPATH', `'..' is not allowed in an s3:// URI: ${uri}`, { uri });
  const key = segments.join('/');
  return { bucket, key, uri: `s3://${bucket}/${key}` };
}

/** The prefix of a directory's entries: '' for the root, `key/` otherwise. */
function dirPrefix(key: string): string {
  return key === '' ? '' : `${key}/`;
}

function unquote(etag: string): string {
  return etag.replace(/^"|"$/g, '');
}

/** The ETag S3 gives an object completed from these parts: MD5 of the parts' MD5s, '-', their count. */
function multipartEtag(parts: readonly UploadedPart[]): string {
  const md5 = createHash('md5');
  for (const p of parts) md5.update(Buffer.from(unquote(p.etag), 'hex'));
  return `"${md5.digest('hex')}-${parts.length}"`;
}

interface SdkErrorShape {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number; attempts?: number };
  $response?: { statusCode?: number };
}

const AUTH_ERRORS = new Set([
  'CredentialsProviderError',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'InvalidToken',
  'ExpiredToken',
  'TokenRefreshRequired',
  'InvalidSecurity',
]);
const MISSING_ERRORS = new Set(['NoSuchKey', 'NoSuchBucket', 'NotFound', 'NoSuchUpload']);

function sdkErrorName(err: unknown): string {
  return (err as SdkErrorShape | undefined)?.name ?? '';
}
function sdkStatus(err: unknown): number | undefined {
  const e = err as SdkErrorShape | undefined;
  return e?.$metadata?.httpStatusCode ?? e?.$response?.statusCode;
}

/** A minimr error for what the SDK threw while doing `action` on `uri`. */
function storeError(err: unknown, action: string, uri: string, store: string): MinimrError {
  if (err instanceof MinimrError) return err;
  const e = (err ?? {}) as SdkErrorShape;
  const name = sdkErrorName(err);
  const status = sdkStatus(err);
  const cause = `${name || 'Error'}${e.code && e.code !== name ? ` ${e.code}` : ''}: ${e.message ?? String(err)}`;
  if (AUTH_ERRORS.has(name) || status === 401 || status === 403) {
    const what =
      name === 'CredentialsProviderError'
        ? `no credentials found for ${store} to ${action} ${uri}`
        : `${store} refused the credentials to ${action} ${uri}`;
    return new MinimrError(
      'EAUTH',
      `${what} (${cause}); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE and a profile ` +
        'in ~/.aws/credentials',
      { uri, store, cause },
      { cause: err },
    );
  }
  if (MISSING_ERRORS.has(name) || status === 404) {
    const what = name === 'NoSuchBucket' ? `bucket of ${uri}` : uri;
    return new MinimrError('ENOENT', `no such ${what} in ${store}`, { uri, store }, { cause: err });
  }
  if (name === 'PreconditionFailed' || status === 412) {
    return new MinimrError('ECHANGED', `${uri} changed while the job read it`, { uri, store }, { cause: err });
  }
  if (status === undefined) {
    const attempts = e.$metadata?.attempts;
    return new MinimrError(
      'ESTORE',
      `cannot reach ${store} to ${action} ${uri}${attempts ? ` (${attempts} attempts)` : ''}: ${cause}`,
      { uri, store, cause, attempts },
      { cause: err },
    );
  }
  return new MinimrError(
    'ESTORE',
    `${store} refused to ${action} ${uri}: ${cause} (HTTP ${status})`,
    { uri, store, cause, status },
    { cause: err },
  );
}

function positiveInt(conf: StoreConf, key: string, fallback: number): number {
  const raw = conf[key];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new MinimrError('EBADCONF', `--conf ${key} must be a positive integer`);
  return n;
}

async function runBounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * `s3://` through the AWS SDK v3. Conf: `s3.endpoint` (URL of an S3-compatible store), `s3.region`
 * (default us-east-1), `s3.pathStyle` (default true when an endpoint is given), `s3.maxAttempts`
 * (default 3), `s3.partSize` (bytes, default 8 MiB, at least 5 MiB).
 */
export function createS3Store(conf: StoreConf = {}, options: S3StoreOptions = {}): Store {
  const endpoint = conf['s3.endpoint'] || undefined;
  const region = conf['s3.region'] || 'us-east-1';
  const pathStyleConf = conf['s3.pathStyle'];
  if (pathStyleConf !== undefined && pathStyleConf !== 'true' && pathStyleConf !== 'false') {
    throw new MinimrError('EBADCONF', `--conf s3.pathStyle must be true or false, not ${pathStyleConf}`);
  }
  const forcePathStyle = pathStyleConf === undefined ? endpoint !== undefined : pathStyleConf === 'true';
  const maxAttempts = positiveInt(conf, 's3.maxAttempts', 3);
  const partSize = positiveInt(conf, 's3.partSize', DEFAULT_PART_SIZE);
  if (partSize < MIN_PART_SIZE)
    throw new MinimrError('EBADCONF', `--conf s3.partSize must be at least ${MIN_PART_SIZE}`);
  if (endpoint !== undefined && !/^https?:\/\/[^/]+/.test(endpoint)) {
    throw new MinimrError('EBADCONF', `--conf s3.endpoint must be an http(s):// URL, not ${endpoint}`);
  }
  const client = new S3Client({
    region,
    ...(endpoint !== undefined ? { endpoint } : {}),
    forcePathStyle,
    maxAttempts,
    // Checksums only where S3 requires them: S3-compatible stores do not all know the newer
    // x-amz-checksum-* headers and trailers the SDK would otherwise add to every upload.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 2000, requestTimeout: 120_000 },
    ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
  });
  const storeName = (bucket: string) => `S3 bucket ${bucket}${endpoint !== undefined ? ` at ${endpoint}` : ''}`;
  const fail = (err: unknown, action: string, a: S3Address) => storeError(err, action, a.uri, storeName(a.bucket));
  const uriOf = (bucket: string, key: string) => `s3://${bucket}/${key}`;

  async function headObject(a: S3Address): Promise<StoreStatus | undefined> {
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket: a.bucket, Key: a.key }));
      return {
        uri: a.uri,
        type: 'file',
        length: head.ContentLength ?? 0,
        mtime: head.LastModified?.getTime() ?? 0,
        version: head.ETag ?? '',
      };
    } catch (err) {
      if (sdkErrorName(err) === 'NotFound' || sdkErrorName(err) === 'NoSuchKey' || sdkStatus(err) === 404) {
        return undefined;
      }
      throw fail(err, 'stat', a);
    }
  }

  /** Every object under `prefix` (no delimiter), page by page: its key and last modification (ms). */
  async function* objectsUnder(a: S3Address, prefix: string): AsyncGenerator<{ key: string; mtime: number }> {
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await client.send(
          new ListObjectsV2Command({ Bucket: a.bucket, Prefix: prefix, ContinuationToken: token }),
        );
      } catch (err) {
        throw fail(err, 'list', a);
      }
      for (const o of page.Contents ?? [])
        if (o.Key !== undefined) yield { key: o.Key, mtime: o.LastModified?.getTime() ?? 0 };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** Every key under `prefix` (no delimiter), page by page. */
  async function* keysUnder(a: S3Address, prefix: string): AsyncGenerator<string> {
    for await (const o of objectsUnder(a, prefix)) yield o.key;
  }

  /** The multipart uploads not completed nor aborted under `prefix`: key, upload id, when started (ms). */
  async function* uploadsUnder(
    a: S3Address,
    prefix: string,
  ): AsyncGenerator<{ key: string; uploadId: string; initiated: number }> {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    let truncated = false;
    do {
      let page: ListMultipartUploadsCommandOutput;
      try {
        page = await client.send(
          new ListMultipartUploadsCommand({
            Bucket: a.bucket,
            Prefix: prefix,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
          }),
        );
      } catch (err) {
        throw fail(err, 'list the uploads under', a);
      }
      for (const u of page.Uploads ?? []) {
        if (u.Key === undefined || u.UploadId === undefined) continue;
        yield { key: u.Key, uploadId: u.UploadId, initiated: u.Initiated?.getTime() ?? 0 };
      }
      truncated = page.IsTruncated === true && (page.NextKeyMarker ?? '') !== '';
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    } while (truncated);
  }

  async function anyKeyUnder(a: S3Address, prefix: string): Promise<boolean> {
    try {
      const page = await client.send(new ListObjectsV2Command({ Bucket: a.bucket, Prefix: prefix, MaxKeys: 1 }));
      return (page.Contents?.length ?? 0) > 0 || (page.CommonPrefixes?.length ?? 0) > 0;
    } catch (err) {
      throw fail(err, 'list', a);
    }
  }

  async function deleteKeys(a: S3Address, keys: readonly string[]): Promise<void> {
    await runBounded(keys, DELETE_CONCURRENCY, async (key) => {
      try {
        await client.send(new DeleteObjectCommand({ Bucket: a.bucket, Key: key }));
      } catch (err) {
        throw fail(err, 'delete', { ...a, key, uri: uriOf(a.bucket, key) });
      }
    });
  }

  async function stat(uri: string): Promise<StoreStatus> {
    const a = parseS3Uri(uri);
    const dir: StoreStatus = { uri: a.uri, type: 'dir', length: 0, mtime: 0, version: '' };
    if (a.key === '') {
      try {
        await client.send(new HeadBucketCommand({ Bucket: a.bucket }));
      } catch (err) {
        const e = fail(err, 'stat', a);
        throw e.code === 'ENOENT' ? new MinimrError('ENOENT', `no such bucket: ${a.uri}`, e.details) : e;
      }
      return dir;
    }
    const file = await headObject(a);
    if (file) return file;
    if (await anyKeyUnder(a, dirPrefix(a.key))) return dir;
    throw new MinimrError('ENOENT', `no such file or directory: ${a.uri}`, { uri: a.uri });
  }

  async function list(uri: string): Promise<StoreStatus[]> {
    const a = parseS3Uri(uri);
    if (a.key !== '') {
      const file = await headObject(a);
      if (file) return [file];
    }
    const prefix = dirPrefix(a.key);
    const entries: StoreStatus[] = [];
    let sawMarker = false;
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await client.send(
          new ListObjectsV2Command({ Bucket: a.bucket, Prefix: prefix, Delimiter: '/', ContinuationToken: token }),
        );
      } catch (err) {
        throw fail(err, 'list', a);
      }
      for (const p of page.CommonPrefixes ?? []) {
        if (p.Prefix === undefined) continue;
        entries.push({ uri: uriOf(a.bucket, p.Prefix.slice(0, -1)), type: 'dir', length: 0, mtime: 0, version: '' });
      }
      for (const o of page.Contents ?? []) {
        if (o.Key === undefined) continue;
        if (o.Key === prefix) {
          sawMarker = true;
          continue;
        }
        entries.push({
          uri: uriOf(a.bucket, o.Key),
          type: 'file',
          length: o.Size ?? 0,
          mtime: o.LastModified?.getTime() ?? 0,
          version: o.ETag ?? '',
        });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    if (entries.length === 0 && !sawMarker && a.key !== '') {
      throw new MinimrError('ENOENT', `no such file or directory: ${a.uri}`, { uri: a.uri });
    }
    entries.sort((x, y) => (x.uri < y.uri ? -1 : x.uri > y.uri ? 1 : 0));
    return entries;
  }

  async function* readRange(uri: string, start: number, end: number, version?: string): AsyncGenerator<Buffer> {
    const a = parseS3Uri(uri);
    if (end <= start) return;
    let body: AsyncIterable<Uint8Array> | undefined;
    try {
      const res = await client.send(
        new GetObjectCommand({
          Bucket: a.bucket,
          Key: a.key,
          Range: Number.isFinite(end) ? `bytes=${start}-${end - 1}` : `bytes=${start}-`,
          ...(version !== undefined && version !== '' ? { IfMatch: version } : {}),
        }),
      );
      body = res.Body as AsyncIterable<Uint8Array> | undefined;
    } catch (err) {
      if (sdkErrorName(err) === 'InvalidRange' || sdkStatus(err) === 416) {
        // Starts at or past the end: nothing to read, once the version is known to be the same.
        if (version !== undefined && version !== '') {
          const now = await headObject(a);
          if (!now) throw new MinimrError('ENOENT', `no such file: ${a.uri}`, { uri: a.uri });
          if (now.version !== version) throw changed(a, version, now.version);
        }
        return;
      }
      const e = fail(err, 'read', a);
      throw e.code === 'ECHANGED' && version !== undefined ? changed(a, version, undefined) : e;
    }
    if (!body) return;
    try {
      for await (const chunk of body) yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    } catch (err) {
      throw fail(err, 'read', a);
    }
  }

  function changed(a: S3Address, expected: string, now: string | undefined): MinimrError {
    return new MinimrError(
      'ECHANGED',
      `${a.uri} changed while the job read it: it is no longer the version listed when the job was ` +
        `planned (ETag ${expected}${now !== undefined ? `, now ${now}` : ''})`,
      { uri: a.uri, expected, ...(now !== undefined ? { now } : {}) },
    );
  }

  /**
   * Bytes toward one object, one part buffered at most: a PutObject if it ends within one part, else a
   * multipart upload (started on the first full part, or at once for a committer's part).
   */
  class ObjectSink {
    private chunks: Buffer[] = [];
    private buffered = 0;
    uploadId: string | undefined;
    readonly parts: UploadedPart[] = [];
    bytes = 0;
    private state: 'open' | 'closed' | 'aborted' = 'open';

    constructor(
      private readonly a: S3Address,
      private readonly metadata: Record<string, string> = {},
    ) {}

    async startUpload(): Promise<string> {
      try {
        const res = await client.send(
          new CreateMultipartUploadCommand({ Bucket: this.a.bucket, Key: this.a.key, Metadata: this.metadata }),
        );
        if (!res.UploadId) throw new MinimrError('ESTORE', `${storeName(this.a.bucket)} gave no upload id`);
        this.uploadId = res.UploadId;
        return res.UploadId;
      } catch (err) {
        throw fail(err, 'start an upload to', this.a);
      }
    }

    async write(data: Buffer): Promise<void> {
      if (this.state !== 'open') throw new MinimrError('EBADREQUEST', `write after close or abort: ${this.a.uri}`);
      if (data.length === 0) return;
      // A copy: the caller may reuse its buffer once the write resolves, before the part goes up.
      this.chunks.push(Buffer.from(data));
      this.buffered += data.length;
      this.bytes += data.length;
      while (this.buffered >= partSize) await this.uploadPart(this.take(partSize));
    }

    private take(n: number): Buffer {
      const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
      const head = all.subarray(0, n);
      const rest = all.subarray(n);
      this.chunks = rest.length > 0 ? [Buffer.from(rest)] : [];
      this.buffered = rest.length;
      return head;
    }

    private async uploadPart(body: Buffer): Promise<void> {
      const uploadId = this.uploadId ?? (await this.startUpload());
      const n = this.parts.length + 1;
      try {
        const res = await client.send(
          new UploadPartCommand({
            Bucket: this.a.bucket,
            Key: this.a.key,
            UploadId: uploadId,
            PartNumber: n,
            Body: body,
          }),
        );
        this.parts.push({ n, etag: res.ETag ?? '' });
      } catch (err) {
        throw fail(err, 'upload a part of', this.a);
      }
    }

    /** Sends what is buffered: the last part of an upload, or the whole object in one PutObject. */
    async finish(): Promise<void> {
      if (this.state !== 'open') throw new MinimrError('EBADREQUEST', `already closed or aborted: ${this.a.uri}`);
      this.state = 'closed';
      if (this.uploadId !== undefined || this.parts.length > 0) {
        // An upload needs at least one part; an empty output part is one empty part.
        if (this.buffered > 0 || this.parts.length === 0) await this.uploadPart(this.take(this.buffered));
        return;
      }
      const body = this.take(this.buffered);
      try {
        await client.send(
          new PutObjectCommand({ Bucket: this.a.bucket, Key: this.a.key, Body: body, Metadata: this.metadata }),
        );
      } catch (err) {
        throw fail(err, 'write', this.a);
      }
    }

    async complete(): Promise<void> {
      if (this.uploadId === undefined) return;
      await completeUpload(this.a, this.uploadId, this.parts);
    }

    async abort(): Promise<void> {
      if (this.state === 'aborted') return;
      this.state = 'aborted';
      this.chunks = [];
      this.buffered = 0;
      if (this.uploadId !== undefined) await abortUpload(this.a, this.uploadId);
    }
  }

  async function completeUpload(a: S3Address, uploadId: string, parts: readonly UploadedPart[]): Promise<string> {
    try {
      const res = await client.send(
        new CompleteMultipartUploadCommand({
          Bucket: a.bucket,
          Key: a.key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.n, ETag: p.etag })) },
        }),
      );
      // Some stores (radosgw) leave the ETag out of the answer; S3 defines it, so it is computed then.
      return res.ETag ? res.ETag : multipartEtag(parts);
    } catch (err) {
      throw fail(err, 'complete the upload of', a);
    }
  }

  /** Aborts an upload; false if it was already gone (aborted, or completed). */
  async function abortUpload(a: S3Address, uploadId: string): Promise<boolean> {
    try {
      await client.send(new AbortMultipartUploadCommand({ Bucket: a.bucket, Key: a.key, UploadId: uploadId }));
      return true;
    } catch (err) {
      if (sdkErrorName(err) === 'NoSuchUpload' || sdkStatus(err) === 404) return false;
      throw fail(err, 'abort the upload of', a);
    }
  }

  /** The `minimr-job` metadata of an object, undefined if it has none or is not there. */
  async function jobOfObject(a: S3Address): Promise<string | undefined> {
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket: a.bucket, Key: a.key }));
      return head.Metadata?.['minimr-job'];
    } catch (err) {
      if (sdkErrorName(err) === 'NotFound' || sdkStatus(err) === 404) return undefined;
      throw fail(err, 'stat', a);
    }
  }

  async function create(uri: string, createOptions: { overwrite?: boolean } = {}): Promise<StoreWriter> {
    const a = parseS3Uri(uri);
    if (a.key === '') throw new MinimrError('EISDIR', `cannot write a bucket's root: ${a.uri}`, { uri: a.uri });
    if (!createOptions.overwrite && (await headObject(a))) {
      throw new MinimrError('EEXIST', `${a.uri} exists`, { uri: a.uri });
    }
    const sink = new ObjectSink(a);
    return {
      write: (data) => sink.write(data),
      close: async () => {
        await sink.finish();
        await sink.complete();
      },
      abort: () => sink.abort(),
    };
  }

  async function mkdir(uri: string): Promise<void> {
    const a = parseS3Uri(uri);
    if (a.key === '') return;
    if (await headObject(a)) throw new MinimrError('EEXIST', `${a.uri} is a file`, { uri: a.uri });
    try {
      await client.send(new PutObjectCommand({ Bucket: a.bucket, Key: dirPrefix(a.key), Body: Buffer.alloc(0) }));
    } catch (err) {
      throw fail(err, 'make the directory', a);
    }
  }

  async function remove(uri: string, removeOptions: { recursive?: boolean } = {}): Promise<void> {
    const a = parseS3Uri(uri);
    const status = await stat(uri);
    if (status.type === 'file') {
      await deleteKeys(a, [a.key]);
      return;
    }
    const prefix = dirPrefix(a.key);
    const keys: string[] = [];
    for await (const key of keysUnder(a, prefix)) keys.push(key);
    if (!removeOptions.recursive && keys.some((k) => k !== prefix)) {
      throw new MinimrError('ENOTEMPTY', `${a.uri} is not empty (remove it recursively)`, { uri: a.uri });
    }
    await deleteKeys(a, keys);
  }

  function outputCommitter(outputUri: string, jobId: string): OutputCommitter {
    const out = parseS3Uri(outputUri);
    const outPrefix = dirPrefix(out.key);
    const pendingPrefix = `${outPrefix}${PENDING_DIR}/`;
    const jobPendingPrefix = `${pendingPrefix}${encodeURIComponent(jobId)}/`;
    const at = (key: string): S3Address => ({ bucket: out.bucket, key, uri: uriOf(out.bucket, key) });

    interface PendingRecord {
      readonly recordKey: string;
      readonly key: string;
      readonly uploadId: string;
      readonly attemptId?: string;
    }

    /** The intent its attempt wrote before the recorded upload (none from before intents existed). */
    const intentKeyOf = (attemptId: string, partKey: string): string =>
      `${jobPendingPrefix}${partKey.slice(outPrefix.length)}/${encodeURIComponent(attemptId)}${INTENT_SUFFIX}`;

    async function jobRecords(): Promise<PendingRecord[]> {
      const records: PendingRecord[] = [];
      for await (const recordKey of keysUnder(out, jobPendingPrefix)) {
        if (intentPart(recordKey.slice(jobPendingPrefix.length)) !== undefined) continue;
        try {
          const res = await client.send(new GetObjectCommand({ Bucket: out.bucket, Key: recordKey }));
          const parsed = JSON.parse((await res.Body?.transformToString()) ?? '{}') as Partial<PendingRecord>;
          if (typeof parsed.key === 'string' && typeof parsed.uploadId === 'string') {
            const attemptId = typeof parsed.attemptId === 'string' ? parsed.attemptId : undefined;
            records.push({
              recordKey,
              key: parsed.key,
              uploadId: parsed.uploadId,
              ...(attemptId ? { attemptId } : {}),
            });
          }
        } catch (err) {
          if (sdkErrorName(err) === 'NoSuchKey') continue;
          if (err instanceof SyntaxError) continue;
          throw fail(err, 'read', at(recordKey));
        }
      }
      return records;
    }

    /** What the records and intents of every job writing this output say (one listing, no reads). */
    interface PendingListing {
      /** This job's intents by the key of their part: their own keys, and when the earliest was written. */
      readonly intents: Map<string, { readonly keys: string[]; since: number }>;
      /** Part keys another job has an intent for: an unrecorded upload there may be its, starting. */
      readonly othersStarting: Set<string>;
      /** The hashes of the upload ids any record names (in its key): those uploads are their records'. */
      readonly recorded: Set<string>;
    }

    async function pendingListing(): Promise<PendingListing> {
      const listing: PendingListing = { intents: new Map(), othersStarting: new Set(), recorded: new Set() };
      for await (const { key, mtime } of objectsUnder(out, pendingPrefix)) {
        const rest = key.slice(pendingPrefix.length);
        const slash = rest.indexOf('/');
        if (slash < 0) continue;
        const name = rest.slice(slash + 1);
        const part = intentPart(name);
        if (part === undefined) {
          const hash = /\.([0-9a-f]{16})$/.exec(name)?.[1];
          if (hash !== undefined) listing.recorded.add(hash);
          continue;
        }
        const partKey = `${outPrefix}${part}`;
        if (`${pendingPrefix}${rest.slice(0, slash + 1)}` !== jobPendingPrefix) {
          listing.othersStarting.add(partKey);
          continue;
        }
        const intent = listing.intents.get(partKey);
        if (intent) {
          intent.keys.push(key);
          intent.since = Math.min(intent.since, mtime);
        } else listing.intents.set(partKey, { keys: [key], since: mtime });
      }
      return listing;
    }

    /**
     * Aborts the uploads this job's attempts started and never recorded (killed in between): at a key
     * this job has an intent for, named by no record, started no earlier than the intent. Where another
     * job has an intent for the same key, an unrecorded upload there may be its: left (see above).
     */
    async function abortUnrecordedUploads(listing: PendingListing): Promise<void> {
      if (listing.intents.size === 0) return;
      for await (const u of uploadsUnder(out, outPrefix)) {
        const intent = listing.intents.get(u.key);
        if (!intent || listing.othersStarting.has(u.key)) continue;
        if (listing.recorded.has(uploadHash(u.uploadId))) continue;
        if (u.initiated < intent.since - INTENT_CLOCK_SLACK_MS) continue;
        await abortUpload(at(u.key), u.uploadId);
      }
    }

    const intentKeysOf = (listing: PendingListing): string[] => [...listing.intents.values()].flatMap((i) => i.keys);

    return {
      async setupJob({ overwrite }) {
        if (overwrite) return;
        const file = out.key !== '' ? await headObject(out) : undefined;
        let exists = file !== undefined;
        if (!exists) {
          for await (const key of keysUnder(out, outPrefix)) {
            if (!key.startsWith(pendingPrefix)) {
              exists = true;
              break;
            }
          }
        }
        if (exists) {
          throw new MinimrError(
            'EOUTPUTEXISTS',
            `output ${out.uri} exists; choose another output or overwrite it (--overwrite)`,
            { uri: out.uri },
          );
        }
      },

      async createPart(attemptId, partName) {
        if (partName.includes('/') || partName.startsWith('_') || partName.startsWith('.')) {
          throw new MinimrError('EBADREQUEST', `bad part name ${partName}`);
        }
        const target = at(`${outPrefix}${partName}`);
        // The intent first: a process killed once its upload is started but before the record is
        // written leaves an upload that only the intent leads an abort to.
        const intent = at(`${jobPendingPrefix}${partName}/${encodeURIComponent(attemptId)}${INTENT_SUFFIX}`);
        try {
          await client.send(
            new PutObjectCommand({
              Bucket: out.bucket,
              Key: intent.key,
              Body: JSON.stringify({ key: target.key, attemptId }),
            }),
          );
        } catch (err) {
          throw fail(err, 'record the upload of', target);
        }
        const sink = new ObjectSink(target, { 'minimr-job': jobId, 'minimr-attempt': attemptId });
        const uploadId = await sink.startUpload();
        const record = at(`${jobPendingPrefix}${partName}.${encodeURIComponent(attemptId)}.${uploadHash(uploadId)}`);
        try {
          await client.send(
            new PutObjectCommand({
              Bucket: out.bucket,
              Key: record.key,
              Body: JSON.stringify({ key: target.key, uploadId, attemptId }),
            }),
          );
        } catch (err) {
          await sink.abort().catch(() => undefined);
          await deleteKeys(out, [intent.key]).catch(() => undefined);
          throw fail(err, 'record the upload of', target);
        }
        return {
          write: (data) => sink.write(data),
          async close(): Promise<PendingPart> {
            await sink.finish();
            const commit: S3PartCommit = { key: target.key, uploadId, parts: sink.parts };
            return { name: partName, bytes: sink.bytes, commit: commit as unknown as JsonValue };
          },
          async abort() {
            await sink.abort();
            await deleteKeys(out, [record.key, intent.key]);
          },
        } satisfies PartWriter;
      },

      async commitJob(parts, options) {
        const manifest: { name: string; bytes: number; etag: string }[] = [];
        const committedKeys = new Set<string>();
        const committedUploads = new Set<string>();
        for (const part of parts) {
          stopIfCancelled(options, out.uri);
          const c = part.commit as unknown as S3PartCommit;
          // The report comes from a task attempt: only an upload to this part's own key is committed.
          if (
            typeof c?.key !== 'string' ||
            c.key !== `${outPrefix}${part.name}` ||
            typeof c.uploadId !== 'string' ||
            !Array.isArray(c.parts)
          ) {
            throw new MinimrError('EBADREQUEST', `part ${part.name} carries no S3 upload of it to commit`);
          }
          const target = at(c.key);
          let etag: string;
          try {
            etag = await completeUpload(target, c.uploadId, c.parts);
          } catch (err) {
            // Completed by an earlier run of this commit (the upload is gone): the object must be it.
            if (!(err instanceof MinimrError && err.code === 'ENOENT')) throw err;
            const now = await headObject(target);
            const expected = multipartEtag(c.parts);
            const sameCount = now !== undefined && unquote(now.version).endsWith(`-${c.parts.length}`);
            if (!now || (now.version !== expected && !(sameCount && now.length === part.bytes))) {
              throw new MinimrError(
                'ESTORE',
                `cannot commit ${target.uri}: its upload is gone and the object there is not the part committed`,
                { uri: target.uri },
              );
            }
            etag = now.version;
          }
          committedKeys.add(c.key);
          committedUploads.add(c.uploadId);
          manifest.push({ name: part.name, bytes: part.bytes, etag });
        }
        // Other attempts' uploads of this job (failed, killed, or speculative losers) are dropped.
        const records = await jobRecords();
        for (const r of records) if (!committedUploads.has(r.uploadId)) await abortUpload(at(r.key), r.uploadId);
        // An overwritten output's old objects that the new output does not have.
        stopIfCancelled(options, out.uri);
        const stale: string[] = [];
        for await (const key of keysUnder(out, outPrefix)) {
          if (key.startsWith(pendingPrefix) || committedKeys.has(key)) continue;
          stale.push(key);
        }
        await deleteKeys(out, stale);
        const success = JSON.stringify({ committer: 'minimr-s3', jobId, parts: manifest }, null, 2);
        try {
          await client.send(
            new PutObjectCommand({
              Bucket: out.bucket,
              Key: `${outPrefix}${SUCCESS_NAME}`,
              Body: success,
              ContentType: 'application/json',
              Metadata: { 'minimr-job': jobId },
            }),
          );
        } catch (err) {
          throw fail(err, 'write', at(`${outPrefix}${SUCCESS_NAME}`));
        }
        // The point of no return: without its records an abort no longer finds the job's objects.
        stopIfCancelled(options, out.uri);
        await deleteKeys(
          out,
          records.map((r) => r.recordKey),
        );
        // A recorded attempt's intent has served: its one upload is completed or aborted. The intent of
        // an attempt with no record stays for cleanupJob, which runs once the job's killed attempts stopped.
        await deleteKeys(
          out,
          records.flatMap((r) => (r.attemptId !== undefined ? [intentKeyOf(r.attemptId, r.key)] : [])),
        );
      },

      async cleanupJob() {
        // The commit deleted the records it read: any left are of attempts that started an upload after
        // it (stragglers), whose uploads no commit will complete; so are a straggler's never recorded.
        const records = await jobRecords();
        for (const r of records) await abortUpload(at(r.key), r.uploadId);
        const listing = await pendingListing();
        await abortUnrecordedUploads(listing);
        await deleteKeys(out, [...records.map((r) => r.recordKey), ...intentKeysOf(listing)]);
      },

      async abortJob(options) {
        // Records are deleted last by a commit, so records left mean no commit finished. An upload that
        // is gone may have been completed by a commit cut short: its object, if this job's, goes too,
        // and so does a _SUCCESS that commit wrote.
        const records = await jobRecords();
        const completed: string[] = [];
        for (const r of records) {
          if (!(await abortUpload(at(r.key), r.uploadId)) && (await jobOfObject(at(r.key))) === jobId) {
            completed.push(r.key);
          }
        }
        const success = `${outPrefix}${SUCCESS_NAME}`;
        if (records.length > 0 && (await jobOfObject(at(success))) === jobId) completed.push(success);
        // Any other object of this job at the output (its uploads carry the job's id): whatever path
        // completed it, a job that did not succeed leaves nothing visible.
        for await (const key of keysUnder(out, outPrefix)) {
          if (key.startsWith(pendingPrefix) || completed.includes(key)) continue;
          if ((await jobOfObject(at(key))) === jobId) completed.push(key);
        }
        await deleteKeys(out, completed);
        // Uploads started and never recorded (their attempt killed in between) are found by their intents.
        const listing = await pendingListing();
        await abortUnrecordedUploads(listing);
        if (options?.keepRecords) return;
        await deleteKeys(out, [...records.map((r) => r.recordKey), ...intentKeysOf(listing)]);
      },
    };
  }

  return { scheme: 's3', stat, list, readRange, create, mkdir, remove, outputCommitter };
}

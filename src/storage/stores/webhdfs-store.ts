/**
 * `webhdfs://host:port/path` (and `hdfs://`, read as WebHDFS): a Store over Hadoop 3's WebHDFS REST
 * API, whether the server is an HDFS NameNode or minimr's own (jobtracker/webhdfs-server.ts).
 *
 * Requests go to the NameNode; OPEN and CREATE answer 307 and this client follows the Location
 * itself (to a DataNode on HDFS), sending its bytes or reading them there. Credentials: the user
 * name (`webhdfs.user`, else the local user) as `user.name=` (HDFS's simple authentication), or a
 * delegation token (`webhdfs.token`) as `delegation=`; with `webhdfs.password`, HTTP Basic too (as
 * minimr's server wants: the user's key or the web password), sent only to the NameNode's own
 * origin. `webhdfs.tls=true` speaks https (`webhdfs.ca`: a PEM file of an authority to trust).
 *
 * A file's version is its length and modification time: a read given a version stats the file
 * before and after and refuses another version (ECHANGED). A file made by `create` is written
 * beside its name under a hidden temporary name and renamed into place at close, so readers never
 * see it half written. The output committer stages a job's output in `<parent>/.<name>.minimr-JOB`:
 * attempts write under its `_temporary/ATTEMPT/`, the job commit renames each committed part into
 * the staging directory, writes `_SUCCESS`, and renames the directory onto the output (after
 * removing an old output when the job replaces it). Each step can run again, so a commit cut
 * short finishes when it is repeated.
 *
 * Errors: a server that cannot be reached or answers 5xx is retried with backoff (bounded), then
 * ESTORE naming the URI and the cause; 401 and SecurityException/InvalidToken are EAUTH naming the
 * store; FileNotFoundException is ENOENT, AccessControlException EPERM, FileAlreadyExistsException
 * EEXIST, PathIsNotEmptyDirectoryException ENOTEMPTY; anything else ESTORE with the server's message.
 */
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { userInfo } from 'node:os';
import { randomBytes } from 'node:crypto';
import { MinimrError, type MinimrErrorCode } from '../../errors.js';
import {
  type CommitOptions,
  type OutputCommitter,
  type PartWriter,
  type PendingPart,
  type Store,
  type StoreConf,
  type StoreStatus,
  type StoreWriter,
  stopIfCancelled,
} from './types.js';
import { attemptsDirOf, checkedStagedPath, stagedPartPath, stagingDirOf } from './staging.js';

export interface WebHdfsStoreOptions {
  /** Attempts of a request whose server cannot be reached or answers 5xx (default 4). */
  readonly attempts?: number;
  /** The first retry's wait, doubled for each next one (default 200 ms). */
  readonly backoffMs?: number;
  /** Per-request timeout (default 60 s). */
  readonly timeoutMs?: number;
}

interface WebHdfsFileStatus {
  readonly pathSuffix: string;
  readonly type: 'FILE' | 'DIRECTORY' | 'SYMLINK';
  readonly length: number;
  readonly modificationTime: number;
}

interface Response {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly message: IncomingMessage;
}

const RETRYABLE_STATUS: ReadonlySet<number> = new Set([500, 502, 503, 504]);

function isStatus(value: unknown): value is WebHdfsFileStatus {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.pathSuffix === 'string' && typeof v.type === 'string' && typeof v.length === 'number';
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function readBody(message: IncomingMessage, limit = 16 * 1024 * 1024): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of message) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      message.destroy();
      break;
    }
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts);
}

function normalizePath(path: string): string {
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return `/${parts.join('/')}`;
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

function nameOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function joinPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

export class WebHdfsStore implements Store {
  readonly scheme = 'webhdfs' as const;
  private readonly secure: boolean;
  private readonly user: string;
  private readonly token: string | undefined;
  private readonly basic: string | undefined;
  private readonly ca: Buffer | undefined;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly timeoutMs: number;

  constructor(
    /** `host:port` of the NameNode's HTTP server. */
    readonly authority: string,
    conf: StoreConf,
    options: WebHdfsStoreOptions = {},
  ) {
    if (!/^[A-Za-z0-9.[\]:-]{1,300}$/.test(authority))
      throw new MinimrError('EBADCONF', `webhdfs://${authority}: not a host:port`);
    this.secure = conf['webhdfs.tls'] === 'true';
    this.user = conf['webhdfs.user'] ?? userInfo().username;
    this.token = conf['webhdfs.token'] || undefined;
    const password = conf['webhdfs.password'];
    this.basic =
      password === undefined ? undefined : `Basic ${Buffer.from(`${this.user}:${password}`).toString('base64')}`;
    const caFile = conf['webhdfs.ca'];
    try {
      this.ca = caFile ? readFileSync(caFile) : undefined;
    } catch (err) {
      throw new MinimrError('EBADCONF', `webhdfs.ca: cannot read ${caFile} (${(err as Error).message})`);
    }
    this.attempts = Math.max(1, options.attempts ?? 4);
    this.backoffMs = options.backoffMs ?? 200;
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  /** The store's URI of a path inside it. */
  uriOf(path: string): string {
    return `webhdfs://${this.authority}${path}`;
  }

  /** The path inside this store a URI names: webhdfs:// or hdfs:// of this authority. */
  pathOf(uri: string): string {
    const m = /^(?:webhdfs|hdfs):\/\/([^/]*)(\/.*)?$/.exec(uri);
    if (!m || m[1] !== this.authority)
      throw new MinimrError('EBADPATH', `${uri} is not a path of webhdfs://${this.authority}`, { uri });
    let path: string;
    try {
      path = decodeURIComponent(m[2] ?? '/');
    } catch {
      throw new MinimrError('EBADPATH', `bad URL encoding in ${uri}`, { uri });
    }
    return normalizePath(path);
  }

  // ------------------------------------------------------------------ HTTP

  private origin(): string {
    return `${this.secure ? 'https' : 'http'}://${this.authority}`;
  }

  private urlOf(path: string, op: string, params: Record<string, string | number | boolean> = {}): URL {
    const url = new URL(`${this.origin()}/webhdfs/v1${path.split('/').map(encodeURIComponent).join('/')}`);
    url.searchParams.set('op', op);
    if (this.token !== undefined) url.searchParams.set('delegation', this.token);
    else url.searchParams.set('user.name', this.user);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, String(v));
    return url;
  }

  /** One request, started: its body is then written by the caller (PUT of data) or ended empty. */
  private start(method: string, url: URL): { req: ClientRequest; response: Promise<Response> } {
    const headers: Record<string, string> = {};
    // Credentials go to the NameNode only; a DataNode's redirect URL carries its own grant.
    if (this.basic !== undefined && url.origin === this.origin()) headers.authorization = this.basic;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, {
      method,
      headers,
      timeout: this.timeoutMs,
      ...(url.protocol === 'https:' && this.ca ? { ca: this.ca } : {}),
    });
    const response = new Promise<Response>((resolve, reject) => {
      req.once('response', (message) =>
        resolve({ status: message.statusCode ?? 0, headers: message.headers, message }),
      );
      req.once('error', reject);
      req.once('timeout', () => req.destroy(new Error(`no answer in ${this.timeoutMs} ms`)));
    });
    return { req, response };
  }

  /**
   * A request without a body, retried with backoff while the server cannot be reached or answers
   * 5xx; ESTORE once the attempts are spent.
   */
  private async call(method: string, url: URL, uri: string): Promise<Response> {
    let cause = '';
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (attempt > 0) await sleep(this.backoffMs * 2 ** (attempt - 1));
      const { req, response } = this.start(method, url);
      req.end();
      try {
        const res = await response;
        if (!RETRYABLE_STATUS.has(res.status)) return res;
        cause = `HTTP ${res.status}: ${await this.remoteMessage(res)}`;
      } catch (err) {
        cause = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      }
    }
    throw new MinimrError(
      'ESTORE',
      `${uri}: the WebHDFS server at ${this.authority} cannot be reached (${cause}) after ${this.attempts} attempts`,
      { uri, cause },
    );
  }

  private async remoteMessage(res: Response): Promise<string> {
    const text = (await readBody(res.message, 64 * 1024)).toString('utf8');
    try {
      const parsed = JSON.parse(text) as { RemoteException?: { exception?: string; message?: string } };
      if (parsed.RemoteException)
        return `${parsed.RemoteException.exception ?? 'RemoteException'}: ${parsed.RemoteException.message ?? ''}`;
    } catch {
      // not JSON: the text itself
    }
    return text.slice(0, 500);
  }

  /** The MinimrError of a WebHDFS error answer. */
  private async failure(res: Response, uri: string, what: string): Promise<MinimrError> {
    const text = (await readBody(res.message, 64 * 1024)).toString('utf8');
    let exception = '';
    let message = text.slice(0, 500);
    try {
      const parsed = JSON.parse(text) as { RemoteException?: { exception?: string; message?: string } };
      exception = parsed.RemoteException?.exception ?? '';
      message = parsed.RemoteException?.message ?? message;
    } catch {
      // not JSON
    }
    const auth = res.status === 401 || /^(SecurityException|InvalidToken|AuthenticationException)$/.test(exception);
    const code: MinimrErrorCode = auth
      ? 'EAUTH'
      : exception === 'FileNotFoundException' || res.status === 404
        ? 'ENOENT'
        : exception === 'AccessControlException'
          ? 'EPERM'
          : exception === 'FileAlreadyExistsException'
            ? 'EEXIST'
            : exception === 'PathIsNotEmptyDirectoryException'
              ? 'ENOTEMPTY'
              : 'ESTORE';
    const prefix = auth
      ? `the WebHDFS store webhdfs://${this.authority} refused the credentials of ${this.who()}`
      : uri;
    return new MinimrError(code, `${prefix}: ${what}: ${exception ? `${exception}: ` : ''}${message}`, {
      uri,
      status: res.status,
    });
  }

  private who(): string {
    return this.token !== undefined ? 'its delegation token (webhdfs.token)' : `user ${this.user}`;
  }

  /** A JSON answer of a NameNode operation; its error as a MinimrError. */
  private async json(method: string, path: string, op: string, params = {}): Promise<unknown> {
    const uri = this.uriOf(path);
    const res = await this.call(method, this.urlOf(path, op, params), uri);
    if (res.status !== 200) throw await this.failure(res, uri, op);
    const text = (await readBody(res.message)).toString('utf8');
    try {
      return text === '' ? null : JSON.parse(text);
    } catch {
      throw new MinimrError('ESTORE', `${uri}: ${op} answered no JSON: ${text.slice(0, 200)}`, { uri });
    }
  }

  /** The Location of a 307 (a DataNode), or the error. */
  private async redirected(method: string, path: string, op: string, params = {}): Promise<URL> {
    const uri = this.uriOf(path);
    const res = await this.call(method, this.urlOf(path, op, params), uri);
    const location = res.headers.location;
    res.message.resume();
    if (res.status !== 307 && res.status !== 302 && res.status !== 301) throw await this.failure(res, uri, op);
    if (!location) throw new MinimrError('ESTORE', `${uri}: ${op} redirected nowhere`, { uri });
    return new URL(location, this.origin());
  }

  // ------------------------------------------------------------------ Store

  private statusOf(path: string, s: WebHdfsFileStatus): StoreStatus {
    const dir = s.type === 'DIRECTORY';
    return {
      uri: this.uriOf(path),
      type: dir ? 'dir' : 'file',
      length: dir ? 0 : s.length,
      mtime: s.modificationTime,
      version: `${dir ? 0 : s.length}-${s.modificationTime}`,
    };
  }

  private async statPath(path: string): Promise<StoreStatus> {
    const answer = (await this.json('GET', path, 'GETFILESTATUS')) as { FileStatus?: unknown } | null;
    if (!isStatus(answer?.FileStatus))
      throw new MinimrError('ESTORE', `${this.uriOf(path)}: GETFILESTATUS answered no FileStatus`);
    return this.statusOf(path, answer.FileStatus);
  }

  private async exists(path: string): Promise<StoreStatus | undefined> {
    try {
      return await this.statPath(path);
    } catch (err) {
      if (err instanceof MinimrError && err.code === 'ENOENT') return undefined;
      throw err;
    }
  }

  stat(uri: string): Promise<StoreStatus> {
    return this.statPath(this.pathOf(uri));
  }

  async list(uri: string): Promise<StoreStatus[]> {
    const path = this.pathOf(uri);
    const answer = (await this.json('GET', path, 'LISTSTATUS')) as {
      FileStatuses?: { FileStatus?: unknown[] };
    } | null;
    const entries = answer?.FileStatuses?.FileStatus;
    if (!Array.isArray(entries)) throw new MinimrError('ESTORE', `${uri}: LISTSTATUS answered no FileStatuses`);
    return entries
      .filter(isStatus)
      .map((e) => this.statusOf(e.pathSuffix === '' ? path : joinPath(path, e.pathSuffix), e));
  }

  async *readRange(uri: string, start: number, end: number, version?: string): AsyncIterable<Buffer> {
    const path = this.pathOf(uri);
    const changed = (now: StoreStatus): MinimrError =>
      new MinimrError('ECHANGED', `${uri} changed while it was read (version ${version}, now ${now.version})`, {
        uri,
      });
    if (version !== undefined) {
      const now = await this.statPath(path);
      if (now.version !== version) throw changed(now);
    }
    if (!(start >= 0) || !(end >= start))
      throw new MinimrError('EBADREQUEST', `invalid byte range [${start}, ${end}) of ${uri}`, { uri });
    if (end === start) return;
    const params: Record<string, number> = { offset: start };
    if (Number.isFinite(end)) params.length = end - start;
    const location = await this.redirected('GET', path, 'OPEN', params);
    const res = await this.call('GET', location, uri);
    if (res.status !== 200) throw await this.failure(res, uri, 'OPEN');
    let got = 0;
    try {
      for await (const chunk of res.message) {
        got += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
    } catch (err) {
      throw new MinimrError('ESTORE', `${uri}: the read broke off after ${got} bytes (${(err as Error).message})`, {
        uri,
      });
    }
    if (version !== undefined) {
      const now = await this.statPath(path);
      if (now.version !== version) throw changed(now);
    }
  }

  async create(uri: string, options: { overwrite?: boolean } = {}): Promise<StoreWriter> {
    const path = this.pathOf(uri);
    if (options.overwrite !== true && (await this.exists(path)))
      throw new MinimrError('EEXIST', `${uri} already exists`, { uri });
    // Written under a hidden name beside its own, renamed into place at close: never seen half written.
    const temporary = joinPath(parentOf(path), `.${nameOf(path)}.minimr-tmp-${randomBytes(6).toString('hex')}`);
    const writer = await this.writeFile(temporary, false);
    return {
      write: (data) => writer.write(data),
      close: async () => {
        await writer.close();
        try {
          if (options.overwrite === true && (await this.exists(path))) await this.removePath(path, true);
          await this.renamePath(temporary, path);
        } catch (err) {
          await this.removePath(temporary, false).catch(() => undefined);
          throw err;
        }
      },
      abort: async () => {
        await writer.abort();
      },
    };
  }

  /** A file written with CREATE's two steps: the data PUT to where the first step redirects. */
  private async writeFile(path: string, overwrite: boolean): Promise<StoreWriter & { readonly bytes: number }> {
    const uri = this.uriOf(path);
    const location = await this.redirected('PUT', path, 'CREATE', { overwrite });
    const { req, response } = this.start('PUT', location);
    req.setHeader('content-type', 'application/octet-stream');
    req.flushHeaders();
    let failed: Error | undefined;
    const early = response.then(
      (res) => res,
      (err: Error) => {
        failed = err;
        return undefined;
      },
    );
    let bytes = 0;
    let ended = false;
    const store = this;
    return {
      get bytes() {
        return bytes;
      },
      async write(data: Buffer): Promise<void> {
        if (failed) throw new MinimrError('ESTORE', `${uri}: the write broke off (${failed.message})`, { uri });
        bytes += data.length;
        // A copy: the request may hold what it was given until the socket takes it, and the caller
        // reuses its buffer once this resolves (StoreWriter.write).
        if (!req.write(Buffer.from(data)))
          await new Promise<void>((resolve) => {
            req.once('drain', resolve);
            req.once('close', resolve);
          });
      },
      async close(): Promise<void> {
        ended = true;
        req.end();
        const res = await early;
        if (!res) throw new MinimrError('ESTORE', `${uri}: the write broke off (${failed?.message})`, { uri });
        if (res.status !== 201 && res.status !== 200) throw await store.failure(res, uri, 'CREATE');
        res.message.resume();
      },
      async abort(): Promise<void> {
        if (!ended) req.destroy();
        await early;
        await store.removePath(path, false).catch(() => undefined);
      },
    };
  }

  async mkdir(uri: string): Promise<void> {
    await this.json('PUT', this.pathOf(uri), 'MKDIRS');
  }

  private async removePath(path: string, recursive: boolean): Promise<boolean> {
    const answer = (await this.json('DELETE', path, 'DELETE', { recursive })) as { boolean?: boolean } | null;
    return answer?.boolean === true;
  }

  async remove(uri: string, options: { recursive?: boolean } = {}): Promise<void> {
    const path = this.pathOf(uri);
    if (!(await this.removePath(path, options.recursive === true)))
      throw new MinimrError('ENOENT', `${uri}: no such file or directory`, { uri });
  }

  /** RENAME, which answers false rather than an error for a missing source or a taken destination. */
  private async renamePath(from: string, to: string): Promise<void> {
    const answer = (await this.json('PUT', from, 'RENAME', { destination: to })) as { boolean?: boolean } | null;
    if (answer?.boolean !== true)
      throw new MinimrError(
        'ESTORE',
        `${this.uriOf(from)}: could not be renamed to ${to} (it is gone, or the destination exists)`,
        { uri: this.uriOf(from) },
      );
  }

  outputCommitter(outputUri: string, jobId: string): OutputCommitter {
    return new WebHdfsCommitter(this, this.pathOf(outputUri), jobId);
  }

  // What the committer uses, by path.
  /** @internal */ statOrUndefined(path: string): Promise<StoreStatus | undefined> {
    return this.exists(path);
  }
  /** @internal */ mkdirPath(path: string): Promise<unknown> {
    return this.json('PUT', path, 'MKDIRS');
  }
  /** @internal */ deletePath(path: string, recursive: boolean): Promise<boolean> {
    return this.removePath(path, recursive);
  }
  /** @internal */ movePath(from: string, to: string): Promise<void> {
    return this.renamePath(from, to);
  }
  /** @internal */ createAt(path: string, overwrite: boolean): Promise<StoreWriter & { readonly bytes: number }> {
    return this.writeFile(path, overwrite);
  }
}

/** Marks a staging directory whose job replaces its output. */
const OVERWRITE_MARKER = '_minimr-overwrite';

class WebHdfsCommitter implements OutputCommitter {
  private readonly staging: string;

  constructor(
    private readonly store: WebHdfsStore,
    private readonly output: string,
    private readonly jobId: string,
  ) {
    if (output === '/') throw new MinimrError('EBADPATH', `the root of ${store.uriOf('/')} cannot be an output`);
    if (!/^[A-Za-z0-9_.-]{1,200}$/.test(jobId)) throw new MinimrError('EBADREQUEST', `bad job id ${jobId}`);
    this.staging = stagingDirOf(output, jobId);
  }

  private uri(path: string): string {
    return this.store.uriOf(path);
  }

  async setupJob(options: { overwrite: boolean }): Promise<void> {
    if (!options.overwrite && (await this.store.statOrUndefined(this.output)))
      throw new MinimrError('EOUTPUTEXISTS', `output ${this.uri(this.output)} already exists`, {
        uri: this.uri(this.output),
      });
    await this.store.mkdirPath(attemptsDirOf(this.staging));
    if (options.overwrite) {
      const marker = await this.store.createAt(joinPath(this.staging, OVERWRITE_MARKER), true);
      await marker.close();
    }
  }

  async createPart(attemptId: string, partName: string): Promise<PartWriter> {
    const path = stagedPartPath(this.staging, attemptId, partName);
    const writer = await this.store.createAt(path, true);
    return {
      write: (data) => writer.write(data),
      abort: () => writer.abort(),
      close: async (): Promise<PendingPart> => {
        await writer.close();
        return { name: partName, bytes: writer.bytes, commit: { path } };
      },
    };
  }

  async commitJob(parts: readonly PendingPart[], options?: CommitOptions): Promise<void> {
    const store = this.store;
    if (!(await store.statOrUndefined(this.staging))) {
      // Run again after the last rename: the output is there, whole.
      if (await store.statOrUndefined(joinPath(this.output, '_SUCCESS'))) return;
      throw new MinimrError('ESTORE', `${this.uri(this.staging)}: the job's staged output is gone`, {
        uri: this.uri(this.staging),
      });
    }
    for (const part of parts) {
      stopIfCancelled(options, this.uri(this.output));
      const from = checkedStagedPath(this.staging, part);
      const target = joinPath(this.staging, part.name);
      if (await store.statOrUndefined(target)) continue;
      await store.movePath(from, target);
    }
    await store.deletePath(attemptsDirOf(this.staging), true);
    const manifest = Buffer.from(
      `${JSON.stringify({ committer: 'minimr-webhdfs', jobId: this.jobId, parts: parts.map((p) => ({ name: p.name, bytes: p.bytes })) })}\n`,
    );
    const success = await store.createAt(joinPath(this.staging, '_SUCCESS'), true);
    await success.write(manifest);
    await success.close();
    stopIfCancelled(options, this.uri(this.output));
    if (await store.statOrUndefined(this.output)) {
      if (!(await store.statOrUndefined(joinPath(this.staging, OVERWRITE_MARKER))))
        throw new MinimrError('EOUTPUTEXISTS', `output ${this.uri(this.output)} appeared while the job ran`, {
          uri: this.uri(this.output),
        });
      await store.deletePath(this.output, true);
    }
    await store.deletePath(joinPath(this.staging, OVERWRITE_MARKER), false);
    await store.movePath(this.staging, this.output);
  }

  async abortJob(): Promise<void> {
    await this.store.deletePath(this.staging, true);
  }

  /** The commit moved the staging directory onto the output: one here again is a straggler's. */
  async cleanupJob(): Promise<void> {
    await this.abortJob();
  }
}

/** A WebHDFS store of the NameNode at `authority` (`host:port`), configured by `conf` (webhdfs.*). */
export function createWebHdfsStore(authority: string, conf: StoreConf, options?: WebHdfsStoreOptions): WebHdfsStore {
  return new WebHdfsStore(authority, conf, options);
}

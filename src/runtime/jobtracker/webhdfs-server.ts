/**
 * The block store as a WebHDFS server (Hadoop 3's REST API of HDFS), at `/webhdfs/v1/<path>?op=...`
 * on the JobTracker's HTTP port, so `curl`, WebHDFS client libraries and `hdfs dfs` read and write
 * minimr's files. The operations are the rows of WEBHDFS_PROTOCOL (wire/webhdfs.ts), served through
 * the one dispatcher (validation, audit) and carried out on the NameNode as the caller, so owner,
 * group and mode bits are checked exactly as for `minimr fs`.
 *
 * Who calls: as everywhere on this port, HTTP Basic with the web password (any user name: the user
 * acted as) or a user's name and key. `user.name=` never authenticates: when present it must name
 * the authenticated user, else 403 "Usernames not matched" (as Hadoop's JspHelper.checkUsername
 * for an authenticated request). GETDELEGATIONTOKEN, signed in with HTTP Basic, answers a token
 * (the user, an expiry 24 h on, an HMAC under a key of this JobTracker process that also binds the
 * credential it was issued under: the user's key, else the web password) that `delegation=` then
 * takes in place of credentials, as HDFS's WebHDFS delegation tokens: a job or a tool can be given
 * it rather than the user's key. Revoking or replacing the user's key, changing the cluster secret
 * or restarting the JobTracker ends every token; RENEW and CANCEL are not served yet.
 *
 * OPEN and CREATE keep WebHDFS's two steps: the first answers 307 with a Location carrying a
 * signed grant (`datatoken=`: operation, path, user, the operation's parameters and an expiry of
 * 60 s, HMAC under a key of this process), as a NameNode's redirect to a DataNode carries a block
 * token; the second step is authorized by that grant alone. As on HDFS, that step is on a worker's
 * data port (storage/webhdfs-datanode.ts): OPEN goes to a worker holding the range's first block,
 * which trades the grant for the range's blocks and their read tokens over its link
 * (`webhdfs-open`) and streams them; CREATE goes to a live worker, which trades the grant for a
 * write session (`webhdfs-create`: the file started as the grant's user) and writes the blocks as
 * any client does, the first replica on its own disk, allocating and committing them through that
 * session, which only that worker may use for that path. An empty file's OPEN, or a cluster
 * without live workers, is served on this port instead.
 *
 * Errors are WebHDFS's: `{"RemoteException":{"exception","javaClassName","message"}}`, with the
 * statuses of Hadoop's ExceptionHandler (FileNotFoundException 404, other IOExceptions such as
 * AccessControlException and FileAlreadyExistsException 403, IllegalArgumentException 400,
 * SecurityException 401 without credentials).
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Value } from '@sinclair/typebox/value';
import { MinimrError } from '../../errors.js';
import type { Logger } from '../../log.js';
import {
  FsClient,
  sendRemoteException,
  waitDrain,
  webHdfsPathOf,
  sendWebHdfsJson,
  type BlockAllocation,
  type BlockInfo,
  type Caller,
  type ClientLocation,
  type DatanodeAddress,
  type FileStatus,
  type Namenode,
  type NamenodeApi,
} from '../../storage/index.js';
import {
  Dispatcher,
  proofMatches,
  WEBHDFS_METHODS,
  WEBHDFS_PREFIX,
  WEBHDFS_PROTOCOL,
  type ArgsOf,
  type CallRecord,
  type Handlers,
  type TSchema,
  type WebHdfsAnswer,
  type WebHdfsOperation,
  type WebHdfsProtocol,
} from '../wire/index.js';

/** How long a redirect's grant stays good: the client follows it at once. */
const DATA_TOKEN_LIFETIME_MS = 60_000;
/** How long a delegation token stays good (HDFS's dfs.namenode.delegation.token.renew-interval). */
const DELEGATION_TOKEN_LIFETIME_MS = 24 * 3600_000;
/** Query parameters WebHDFS clients send that change nothing here. */
const IGNORED_PARAMS: ReadonlySet<string> = new Set([
  'op',
  'user.name',
  'doas',
  'delegation',
  'buffersize',
  'namenoderpcaddress',
]);

/** One WebHDFS request as the dispatcher sees it. */
export interface WebHdfsPeer {
  readonly user: string;
  readonly address: string;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  /** How the request proved its user: HTTP Basic, a delegation token, or its redirect's grant. */
  readonly via: 'basic' | 'delegation' | 'grant';
  /** The credential a delegation token of this user is bound to (its key, else the web password). */
  readonly binding: string;
}

/** The credential a user's tokens are bound to: changing it (a revoked key) ends them. */
export type CredentialBinding = (user: string) => string;

export interface WebHdfsServerParts {
  readonly namenode: Namenode;
  readonly logger: Logger;
  /** Told of each operation once it has ended (the audit log). */
  audit?(record: CallRecord<WebHdfsPeer>, address: string): void;
  readonly clock?: () => number;
}

/** The NameNode as `caller` sees it: what an FsClient reads and writes through. */
function namenodeAs(nn: Namenode, caller: Caller): NamenodeApi {
  return {
    mkdir: (p, o) => nn.mkdir(p, o, caller),
    stat: (p) => nn.stat(p, caller),
    list: (p) => nn.list(p, caller),
    remove: (p, o) => nn.remove(p, o, caller),
    rename: (a, b) => nn.rename(a, b, caller),
    create: (p, o) => nn.create(p, o, caller),
    allocateBlock: (p, c) => nn.allocateBlock(p, c, caller),
    commitBlock: (p, b) => nn.commitBlock(p, b, caller),
    complete: (p, last) => nn.complete(p, last, caller),
    abandon: (p) => nn.abandon(p, caller),
    getBlocks: (p, c) => nn.getBlocks(p, c, caller),
    reportBadReplica: (b, w) => nn.reportBadReplica(b, w),
    chmod: (p, m) => nn.chmod(p, m, caller),
    chown: (p, o, g, opt) => nn.chown(p, o, g, opt, caller),
  };
}

/** A FileStatus as WebHDFS's JSON has it (directories: length, replication and block size 0). */
export function webHdfsFileStatus(status: FileStatus, pathSuffix: string): Record<string, unknown> {
  const dir = status.type === 'dir';
  return {
    accessTime: dir ? 0 : status.mtime,
    blockSize: dir ? 0 : status.blockSize,
    group: status.group,
    length: dir ? 0 : status.length,
    modificationTime: status.mtime,
    owner: status.owner,
    pathSuffix,
    permission: (status.mode & 0o1777).toString(8),
    replication: dir ? 0 : status.replication,
    type: dir ? 'DIRECTORY' : 'FILE',
  };
}

function json(body: unknown, status = 200): WebHdfsAnswer {
  return { kind: 'json', status, body };
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function joinPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

/** The canonical text of the parameters a grant binds: what the second step will do. */
function grantedParams(args: Record<string, unknown>): string {
  return JSON.stringify(
    Object.keys(args)
      .filter((k) => k !== 'datatoken' && k !== 'noredirect')
      .sort()
      .map((k) => [k, args[k]]),
  );
}

/** A request's query as an operation's arguments: numbers and booleans converted as its row says. */
function rawArgs(op: WebHdfsOperation, path: string, params: Iterable<[string, string]>): Record<string, unknown> {
  const properties = (WEBHDFS_PROTOCOL[op].args.properties ?? {}) as Record<string, TSchema>;
  const raw: Record<string, unknown> = { path };
  for (const [key, value] of params) {
    if (IGNORED_PARAMS.has(key)) continue;
    raw[key] = properties[key] ? Value.Convert(properties[key], value) : value;
  }
  return raw;
}

/** A file a worker writes for a WebHDFS CREATE redirected to it: whose, where, and by which worker. */
interface WriteSession {
  readonly user: string;
  readonly path: string;
  readonly workerId: string;
  readonly permission: string | undefined;
  readonly startedAt: number;
}

/** Open write sessions at most (a worker that vanished mid-write leaves one until it is swept). */
const MAX_WRITE_SESSIONS = 10_000;
const WRITE_SESSION_MAX_AGE_MS = 24 * 3600_000;

export class WebHdfsServer {
  private readonly writes = new Map<string, WriteSession>();
  private readonly key = randomBytes(32);
  private readonly dispatcher: Dispatcher<WebHdfsPeer>;
  private readonly clock: () => number;

  constructor(private readonly parts: WebHdfsServerParts) {
    this.clock = parts.clock ?? Date.now;
    this.dispatcher = new Dispatcher<WebHdfsPeer>('the WebHDFS server', (peer) => ({
      user: peer.user,
      roles: new Set(),
    }))
      .serve(WEBHDFS_PROTOCOL, this.handlers())
      .observe((record) => parts.audit?.(record, record.peer.address));
  }

  static handles(pathname: string): boolean {
    return pathname === WEBHDFS_PREFIX || pathname.startsWith(`${WEBHDFS_PREFIX}/`);
  }

  /**
   * Serves one request under /webhdfs/v1; `basicUser` is who its HTTP Basic credentials proved
   * (undefined: none or wrong ones).
   */
  handle(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    basicUser: string | undefined,
    bindingOf: CredentialBinding,
  ): void {
    void this.serve(req, res, url, basicUser, bindingOf).catch((err: unknown) => this.fail(res, err));
  }

  private async serve(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    basicUser: string | undefined,
    bindingOf: CredentialBinding,
  ): Promise<void> {
    const opName = (url.searchParams.get('op') ?? '').toUpperCase();
    if (!Object.hasOwn(WEBHDFS_METHODS, opName))
      throw new MinimrError('EBADREQUEST', `Invalid value for webhdfs parameter "op": ${JSON.stringify(opName)}`);
    const op = opName as WebHdfsOperation;
    const method = WEBHDFS_METHODS[op];
    if (req.method !== method)
      throw new MinimrError('EBADREQUEST', `Invalid value for webhdfs parameter "op": ${op} is a ${method} operation`);
    const dataToken = url.searchParams.get('datatoken');
    const delegation = url.searchParams.get('delegation');
    // A grant names its user; its signature is checked by the operation before anything is done.
    const via = dataToken !== null ? 'grant' : delegation !== null ? 'delegation' : 'basic';
    const user =
      dataToken !== null
        ? this.grantUser(dataToken)
        : delegation !== null
          ? this.verifyDelegation(delegation, bindingOf)
          : basicUser;
    if (user === undefined)
      throw new MinimrError(
        'EAUTH',
        'authentication required: HTTP Basic with your user name and key, or any user name ' +
          'and the web password (`minimr web-password`), or delegation=TOKEN; user.name= alone is not accepted',
      );
    const named = url.searchParams.get('user.name');
    if (named !== null && named !== user)
      throw new MinimrError('EPERM', `Usernames not matched: name=${named} != expected=${user}`, {
        exception: 'SecurityException',
      });
    const raw = rawArgs(op, webHdfsPathOf(url.pathname), url.searchParams);
    const peer: WebHdfsPeer = {
      user,
      address: req.socket.remoteAddress ?? '',
      req,
      res,
      url,
      via,
      binding: bindingOf(user),
    };
    const answer = (await this.dispatcher.call(op, raw, peer)) as WebHdfsAnswer;
    this.send(res, answer, req);
  }

  private send(res: ServerResponse, answer: WebHdfsAnswer, req: IncomingMessage): void {
    switch (answer.kind) {
      case 'streamed':
        return;
      case 'json':
        if (answer.body === null) res.writeHead(answer.status, { 'content-length': 0 }).end();
        else sendWebHdfsJson(res, answer.status, answer.body);
        return;
      case 'redirect':
        // The first step of OPEN/CREATE may come with a body (curl -T sends it at once): not read.
        res.writeHead(307, { location: answer.location, 'content-length': 0 }).end();
        req.resume();
        return;
      case 'created':
        res.writeHead(201, { location: answer.location, 'content-length': 0 }).end();
        return;
    }
  }

  private fail(res: ServerResponse, err: unknown): void {
    sendRemoteException(res, err, this.parts.logger);
  }

  // ------------------------------------------------------------------ grants of the two-step operations

  private mac(op: WebHdfsOperation, user: string, expiresAt: number, args: Record<string, unknown>): string {
    return createHmac('sha256', this.key)
      .update(`minimr-webhdfs-grant-v1\0${op}\0${user}\0${expiresAt}\0${grantedParams(args)}`)
      .digest('base64url');
  }

  private issueGrant(op: WebHdfsOperation, user: string, args: Record<string, unknown>): string {
    const expiresAt = Math.floor(this.clock() + DATA_TOKEN_LIFETIME_MS);
    return `${Buffer.from(user, 'utf8').toString('base64url')}.${expiresAt}.${this.mac(op, user, expiresAt, args)}`;
  }

  private grantUser(token: string): string {
    const user = Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8');
    if (user === '') throw new MinimrError('ETOKEN', 'the redirect grant (datatoken=) is malformed');
    return user;
  }

  private verifyGrant(op: WebHdfsOperation, token: string, user: string, args: Record<string, unknown>): void {
    const m = /^[A-Za-z0-9_-]+\.(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(token);
    const expiresAt = m ? Number(m[1]) : 0;
    if (!m || !proofMatches(this.mac(op, user, expiresAt, args), m[2]))
      throw new MinimrError('ETOKEN', `the redirect grant (datatoken=) is not valid for this ${op} of ${args.path}`);
    if (this.clock() > expiresAt)
      throw new MinimrError('ETOKEN', `the redirect grant of this ${op} has expired: start again at the first step`);
  }

  private delegationMac(user: string, expiresAt: number, binding: string): string {
    return createHmac('sha256', this.key)
      .update(`minimr-webhdfs-delegation-v1\0${user}\0${expiresAt}\0`)
      .update(createHmac('sha256', this.key).update(binding).digest())
      .digest('base64url');
  }

  /** A delegation token of `user`, bound to the credential `binding` (their key, else the web password). */
  delegationTokenFor(user: string, binding: string): string {
    return this.issueDelegation(user, binding);
  }

  private issueDelegation(user: string, binding: string): string {
    const expiresAt = Math.floor(this.clock() + DELEGATION_TOKEN_LIFETIME_MS);
    return `${Buffer.from(user, 'utf8').toString('base64url')}.${expiresAt}.${this.delegationMac(user, expiresAt, binding)}`;
  }

  /** The user of a valid delegation token; ETOKEN for a forged, expired or revoked one. */
  private verifyDelegation(token: string, bindingOf: CredentialBinding): string {
    const m = /^([A-Za-z0-9_-]{1,400})\.(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(token);
    const user = m ? Buffer.from(m[1]!, 'base64url').toString('utf8') : '';
    const expiresAt = m ? Number(m[2]) : 0;
    if (!m || user === '' || !proofMatches(this.delegationMac(user, expiresAt, bindingOf(user)), m[3]))
      throw new MinimrError(
        'ETOKEN',
        'the delegation token is not valid here (not issued by this JobTracker since it started, ' +
          "or the user's credential changed since)",
      );
    if (this.clock() > expiresAt) throw new MinimrError('ETOKEN', `the delegation token of ${user} has expired`);
    return user;
  }

  /** The second step's URL: this request's, with the grant and without `noredirect`. */
  private redirectUrl(
    peer: WebHdfsPeer,
    op: WebHdfsOperation,
    args: Record<string, unknown>,
    datanode: DatanodeAddress | undefined,
  ): string {
    // Workers' data ports are HTTPS exactly when this port is (a TLS cluster), under the cluster's authority.
    const secure = (peer.req.socket as TLSSocket).encrypted === true;
    const host = peer.req.headers.host;
    const authority = datanode
      ? `${datanode.host.includes(':') ? `[${datanode.host}]` : datanode.host}:${datanode.dataPort}`
      : host && /^[A-Za-z0-9.:[\]-]{1,300}$/.test(host)
        ? host
        : `localhost:${peer.req.socket.localPort ?? 0}`;
    const next = new URL(`${secure ? 'https' : 'http'}://${authority}${peer.url.pathname}`);
    for (const [key, value] of peer.url.searchParams) if (key !== 'noredirect') next.searchParams.append(key, value);
    // As HDFS's: the DataNode learns which NameNode to name in CREATE's answer (Location).
    if (datanode && host && /^[A-Za-z0-9.:[\]-]{1,300}$/.test(host)) next.searchParams.set('namenoderpcaddress', host);
    next.searchParams.set('datatoken', this.issueGrant(op, peer.user, args));
    return next.toString();
  }

  private redirect(
    peer: WebHdfsPeer,
    op: WebHdfsOperation,
    args: Record<string, unknown>,
    datanode?: DatanodeAddress,
  ): WebHdfsAnswer {
    const location = this.redirectUrl(peer, op, args, datanode);
    return args.noredirect === true ? json({ Location: location }) : { kind: 'redirect', location };
  }

  // ------------------------------------------------------------------ the operations

  private handlers(): Handlers<WebHdfsProtocol, WebHdfsPeer> {
    const nn = this.parts.namenode;
    const as = (user: string): Caller => nn.callerFor(user);
    return {
      GETFILESTATUS: async ({ path }, { caller }) =>
        json({ FileStatus: webHdfsFileStatus(await nn.stat(path, as(caller.user)), '') }),
      LISTSTATUS: async ({ path }, { caller }) => {
        const who = as(caller.user);
        const status = await nn.stat(path, who);
        const entries = status.type === 'file' ? [status] : await nn.list(path, who);
        return json({
          FileStatuses: {
            FileStatus: entries.map((e) => webHdfsFileStatus(e, status.type === 'file' ? '' : basename(e.path))),
          },
        });
      },
      GETCONTENTSUMMARY: async ({ path }, { caller }) =>
        json({ ContentSummary: await this.summary(path, as(caller.user)) }),
      OPEN: (args, { caller, peer }) => this.open(args, as(caller.user), peer),
      CREATE: (args, { caller, peer }) => this.create(args, as(caller.user), peer),
      MKDIRS: async ({ path, permission }, { caller }) => {
        const who = as(caller.user);
        await nn.mkdir(path, { parents: true }, who);
        if (permission !== undefined) await nn.chmod(path, permission, who);
        return json({ boolean: true });
      },
      RENAME: async ({ path, destination }, { caller }) => {
        const who = as(caller.user);
        let target = destination;
        // As HDFS: a rename onto a directory that exists moves the source inside it.
        const existing = await nn.stat(destination, who).catch(() => undefined);
        if (existing?.type === 'dir') target = joinPath(destination, basename(path));
        try {
          await nn.rename(path, target, who);
          return json({ boolean: true });
        } catch (err) {
          if (err instanceof MinimrError && (err.code === 'ENOENT' || err.code === 'EEXIST'))
            return json({ boolean: false });
          throw err;
        }
      },
      DELETE: async ({ path, recursive }, { caller }) => {
        try {
          await nn.remove(path, { recursive: recursive === true }, as(caller.user));
          return json({ boolean: true });
        } catch (err) {
          if (err instanceof MinimrError && err.code === 'ENOENT') return json({ boolean: false });
          throw err;
        }
      },
      GETDELEGATIONTOKEN: (_args, { caller, peer }) => {
        if (peer.via !== 'basic')
          throw new MinimrError(
            'EPERM',
            'a delegation token is issued only to a request signed in with HTTP Basic, not with another token',
            { exception: 'SecurityException' },
          );
        return json({ Token: { urlString: this.issueDelegation(caller.user, peer.binding) } });
      },
      SETPERMISSION: async ({ path, permission }, { caller }) => {
        await nn.chmod(path, permission ?? '755', as(caller.user));
        return json(null);
      },
    };
  }

  private async summary(path: string, who: Caller): Promise<Record<string, number>> {
    const nn = this.parts.namenode;
    let directoryCount = 0;
    let fileCount = 0;
    let length = 0;
    let spaceConsumed = 0;
    const pending: FileStatus[] = [await nn.stat(path, who)];
    for (let entry = pending.pop(); entry; entry = pending.pop()) {
      if (entry.type === 'file') {
        fileCount++;
        length += entry.length;
        spaceConsumed += entry.length * entry.replication;
      } else {
        directoryCount++;
        pending.push(...(await nn.list(entry.path, who)));
      }
    }
    return { directoryCount, fileCount, length, quota: -1, spaceConsumed, spaceQuota: -1 };
  }

  private async open(args: ArgsOf<WebHdfsProtocol['OPEN']>, who: Caller, peer: WebHdfsPeer): Promise<WebHdfsAnswer> {
    const { path, offset = 0, length, datatoken } = args;
    const nn = this.parts.namenode;
    if (datatoken !== undefined) this.verifyGrant('OPEN', datatoken, who.user, args);
    const status = await nn.stat(path, who);
    if (status.type !== 'file') throw new MinimrError('EISDIR', `Path is not a file: ${path}`, { path });
    if (offset > status.length)
      throw new MinimrError('EBADREQUEST', `Offset=${offset} out of the range [0, ${status.length}]`, { path });
    if (datatoken === undefined) {
      // The read right is checked here, so a refused reader gets its 403 before any redirect.
      const blocks = await nn.getBlocks(path, undefined, who);
      // As a NameNode: to a DataNode holding the range's first block (any of its replicas).
      const first = blocks.find((b) => b.offset <= offset && offset < b.offset + b.length);
      const replicas = first?.locations ?? [];
      const datanode = replicas[Math.floor(Math.random() * replicas.length)];
      return this.redirect(peer, 'OPEN', args, datanode);
    }
    const end = length === undefined ? status.length : Math.min(status.length, offset + length);
    const fs = new FsClient({ namenode: namenodeAs(nn, who), logger: this.parts.logger });
    const pieces = fs.readRange(path, offset, end)[Symbol.asyncIterator]();
    // The first piece before the headers: a read that cannot start is still an error answer.
    const first = end > offset ? await pieces.next() : { done: true as const, value: undefined };
    peer.res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': end - offset });
    if (!first.done) {
      if (!peer.res.write(first.value)) await waitDrain(peer.res);
      for (let next = await pieces.next(); !next.done; next = await pieces.next())
        if (!peer.res.write(next.value)) await waitDrain(peer.res);
    }
    peer.res.end();
    return { kind: 'streamed' };
  }

  /**
   * For a worker serving the second step of an OPEN this server redirected to it: the blocks of the
   * granted range, read as the grant's user (who must still be allowed to).
   */
  async openAtDatanode(args: {
    readonly path: string;
    readonly offset?: number;
    readonly length?: number;
    readonly grant: string;
  }): Promise<{ fileLength: number; start: number; end: number; blocks: BlockInfo[] }> {
    const { path, offset, length, grant } = args;
    const user = this.grantUser(grant);
    const granted = { path, ...(offset !== undefined ? { offset } : {}), ...(length !== undefined ? { length } : {}) };
    this.verifyGrant('OPEN', grant, user, granted);
    const nn = this.parts.namenode;
    const who = nn.callerFor(user);
    const status = await nn.stat(path, who);
    if (status.type !== 'file') throw new MinimrError('EISDIR', `Path is not a file: ${path}`, { path });
    const start = Math.min(offset ?? 0, status.length);
    const end = length === undefined ? status.length : Math.min(status.length, start + length);
    const blocks = (await nn.getBlocks(path, undefined, who)).filter(
      (b) => b.offset < end && b.offset + b.length > start,
    );
    return { fileLength: status.length, start, end, blocks };
  }

  /**
   * For a worker taking the bytes of a CREATE this server redirected to it: the grant checked as on
   * this port, the file started as the grant's user, and a session for the worker's next calls.
   */
  async createAtDatanode(
    args: { readonly path: string; readonly params: Readonly<Record<string, string>>; readonly grant: string },
    workerId: string,
  ): Promise<{ session: string; blockSize: number; replication: number }> {
    const user = this.grantUser(args.grant);
    const granted = WEBHDFS_PROTOCOL.CREATE.validator.parse(rawArgs('CREATE', args.path, Object.entries(args.params)), {
      operation: 'webhdfs-create',
    });
    if (granted.datatoken !== undefined)
      throw new MinimrError('EBADREQUEST', 'the grant travels beside the parameters');
    this.verifyGrant('CREATE', args.grant, user, granted);
    const now = this.clock();
    for (const [id, session] of this.writes)
      if (now - session.startedAt > WRITE_SESSION_MAX_AGE_MS) this.writes.delete(id);
    if (this.writes.size >= MAX_WRITE_SESSIONS)
      throw new MinimrError('EBUSY', `${MAX_WRITE_SESSIONS} WebHDFS writes are open: try again later`);
    const nn = this.parts.namenode;
    const created = await nn.create(
      args.path,
      {
        overwrite: granted.overwrite === true,
        parents: true,
        ...(granted.replication !== undefined ? { replication: granted.replication } : {}),
        ...(granted.blocksize !== undefined ? { blockSize: granted.blocksize } : {}),
      },
      nn.callerFor(user),
    );
    const session = randomBytes(16).toString('hex');
    this.writes.set(session, { user, path: args.path, workerId, permission: granted.permission, startedAt: now });
    return { session, ...created };
  }

  /** The user of a write session, if it is `workerId`'s for `path`; ETOKEN otherwise. */
  private writer(session: string, path: string, workerId: string): Caller {
    const open = this.writes.get(session);
    if (!open || open.path !== path || open.workerId !== workerId)
      throw new MinimrError(
        'ETOKEN',
        `no WebHDFS write of ${path} is open for worker ${workerId} (session ${session})`,
      );
    return this.parts.namenode.callerFor(open.user);
  }

  allocateAtDatanode(
    args: { readonly path: string; readonly session: string; readonly client?: ClientLocation },
    workerId: string,
  ): Promise<BlockAllocation> {
    return this.parts.namenode.allocateBlock(args.path, args.client, this.writer(args.session, args.path, workerId));
  }

  async commitBlockAtDatanode(
    args: {
      readonly path: string;
      readonly session: string;
      readonly blockId: string;
      readonly length: number;
      readonly crc32: number;
      readonly workerIds: readonly string[];
    },
    workerId: string,
  ): Promise<null> {
    const { path, session, ...block } = args;
    await this.parts.namenode.commitBlock(path, block, this.writer(session, path, workerId));
    return null;
  }

  /** Makes a write session's file visible, with the permission its CREATE asked; its status. */
  async completeAtDatanode(args: { readonly path: string; readonly session: string }, workerId: string) {
    const who = this.writer(args.session, args.path, workerId);
    const permission = this.writes.get(args.session)?.permission;
    this.writes.delete(args.session);
    const nn = this.parts.namenode;
    await nn.complete(args.path, undefined, who);
    if (permission !== undefined) await nn.chmod(args.path, permission, who);
    return nn.stat(args.path, who);
  }

  /** Drops a write session's file (its writer failed). */
  async abandonAtDatanode(args: { readonly path: string; readonly session: string }, workerId: string) {
    const who = this.writer(args.session, args.path, workerId);
    this.writes.delete(args.session);
    await this.parts.namenode.abandon(args.path, who);
    return null;
  }

  private async create(
    args: ArgsOf<WebHdfsProtocol['CREATE']>,
    who: Caller,
    peer: WebHdfsPeer,
  ): Promise<WebHdfsAnswer> {
    const { path, overwrite, permission, replication, blocksize, datatoken } = args;
    const nn = this.parts.namenode;
    if (datatoken === undefined) {
      const existing = await nn.stat(path, who).catch((err: unknown) => {
        if (err instanceof MinimrError && err.code === 'ENOENT') return undefined;
        throw err;
      });
      if (existing?.type === 'dir') throw new MinimrError('EEXIST', `${path} already exists as a directory`, { path });
      if (existing && overwrite !== true)
        throw new MinimrError('EEXIST', `${path} for client already exists`, { path });
      // As a NameNode: to a DataNode, which writes the first replica of each block on its own disk.
      const live = nn.liveDatanodes();
      return this.redirect(peer, 'CREATE', args, live[Math.floor(Math.random() * live.length)]);
    }
    this.verifyGrant('CREATE', datatoken, who.user, args);
    const fs = new FsClient({ namenode: namenodeAs(nn, who), logger: this.parts.logger });
    const writer = await fs.createWriter(path, {
      overwrite: overwrite === true,
      ...(replication !== undefined ? { replication } : {}),
      ...(blocksize !== undefined ? { blockSize: blocksize } : {}),
    });
    try {
      for await (const chunk of peer.req) await writer.write(chunk as Buffer);
      await writer.close();
    } catch (err) {
      await writer.abort().catch(() => undefined);
      throw err;
    }
    if (permission !== undefined) await nn.chmod(path, permission, who);
    const host = peer.req.headers.host ?? 'localhost';
    return { kind: 'created', location: `webhdfs://${host}${encodeURI(path)}` };
  }
}

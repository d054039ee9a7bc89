import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { WebSocket } from 'ws';
import { MinimrError, serializeError, type SerializedError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { publicError } from '../../util/index.js';
import { validateUserName } from '../../storage/index.js';
import {
  AUTH_TIMEOUT_MS,
  authProof,
  inProcessCredentials,
  newNonce,
  proofMatches,
  type AuthVia,
  type Credentials,
  type PeerSecurity,
} from './auth.js';
import type { Dispatcher } from './dispatch.js';
import { decodeFrame, encodeFrame } from './frame-codec.js';
import {
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  argumentsOf,
  type Frame,
  type OperationFrame,
  type ReplyFrame,
} from './frames.js';
import type { AuthResult } from './handshake.js';
import type { Message } from './messages.js';
import { PendingReplies } from './pending-replies.js';
import type { Link } from './stubs.js';
import { authorityToTrust } from './tls.js';

/**
 * The keys a JobTracker checks proofs with: the cluster secret, and a user's current key by name
 * (undefined for a user unknown or revoked).
 */
export interface PeerKeys {
  readonly secret: Buffer;
  readonly userKey: (user: string) => Buffer | undefined;
}

/** Close codes (RFC 6455) used when a peer misbehaves. */
export const CLOSE_PROTOCOL_ERROR = 1002;
export const CLOSE_UNSUPPORTED_DATA = 1003;
/** Application close code (4000-4999): the peer did not authenticate. */
export const CLOSE_AUTH_FAILED = 4401;

/**
 * A peer played by hand, frame by frame: the handshake before a connection has authenticated, and
 * tests that act as a worker or a rogue. Every endpoint of the system serves a Dispatcher instead.
 */
export type RawHandler = (frame: Message, peer: RpcPeer) => unknown;

/** A frame as a sender writes it: the version and a request's id are the peer's to fill in. */
export type Outgoing = { readonly type: string } & Record<string, unknown>;

/**
 * One end of a WebSocket link: framing, request/reply correlation, the rule that a malformed frame
 * closes this connection only, and the hand-off of every request and event to the endpoint's
 * dispatcher (dispatch.ts), whose answer or error becomes the reply.
 */
export class RpcPeer extends EventEmitter implements Link {
  readonly socket: WebSocket;
  private readonly pending = new PendingReplies();
  private handler: Dispatcher<RpcPeer> | RawHandler;
  private readonly logger?: Logger;
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Free slot for the owner (e.g. the worker id once registered). */
  label = '';
  /** The user this connection authenticated as (server side); empty before. */
  user = '';
  /** What it proved (server side): the cluster secret (a daemon) or the user's own credential. */
  authenticatedVia: AuthVia | undefined;

  constructor(socket: WebSocket, handler: Dispatcher<RpcPeer> | RawHandler, logger?: Logger) {
    super();
    this.socket = socket;
    this.handler = handler;
    this.logger = logger;
    this.closed = new Promise((resolve) => {
      socket.once('close', (code: number, reason: Buffer) => {
        const why = reason.toString();
        this.pending.failAll(
          new MinimrError('ECONNECT', `connection closed before a reply arrived (${code}${why ? `: ${why}` : ''})`),
        );
        resolve({ code, reason: why });
      });
    });
    socket.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => this.onFrame(data, isBinary));
    socket.on('error', (err) => {
      this.logger?.warn({ err: err.message, peer: this.label }, 'socket error');
    });
  }

  /** From now on, requests and events go to `handler`. */
  serve(handler: Dispatcher<RpcPeer> | RawHandler): void {
    this.handler = handler;
  }

  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  /** Sends an event (or a reply) as written. */
  send(message: Outgoing): void {
    if (!this.isOpen) return;
    this.socket.send(encodeFrame({ v: PROTOCOL_VERSION, ...message } as Frame));
  }

  /** Sends a request as written and resolves with its answer. */
  request<T>(message: Outgoing, timeoutMs = 0): Promise<T> {
    if (!this.isOpen) return Promise.reject(new MinimrError('ECONNECT', 'connection is closed'));
    const { id, answer } = this.pending.open(message.type, timeoutMs);
    this.socket.send(encodeFrame({ v: PROTOCOL_VERSION, ...message, id } as Frame));
    return answer as Promise<T>;
  }

  call(type: string, args: object, timeoutMs?: number): Promise<unknown> {
    return this.request({ ...args, type }, timeoutMs);
  }

  tell(type: string, args: object): void {
    this.send({ ...args, type });
  }

  close(code = 1000, reason = ''): void {
    // Close reasons are limited to 123 bytes by RFC 6455.
    const short = Buffer.from(reason).subarray(0, 120).toString();
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING)
      this.socket.close(code, short);
  }

  terminate(): void {
    this.socket.terminate();
  }

  /**
   * An error as a reply carries it: code, message and details, never a stack. An error that is not
   * a MinimrError is a fault of this side whose text may name its files: the peer gets EINTERNAL
   * and a reference to find the whole error in this side's log.
   */
  private replyError(err: unknown, type: string): SerializedError {
    if (err instanceof MinimrError) {
      // What this side's files are called stays here (a full disk's error names its directory).
      const shown = publicError({ code: err.code, message: err.message, details: { ...err.details } });
      if (shown.message !== err.message)
        this.logger?.info(
          { err: serializeError(err), type, peer: this.label || this.user },
          'error answered without its paths',
        );
      return shown;
    }
    const reference = randomBytes(4).toString('hex');
    this.logger?.error({ err: serializeError(err), type, reference, peer: this.label || this.user }, 'request failed');
    return {
      code: 'EINTERNAL',
      message: `internal error while handling "${type}" (reference ${reference} in the server's log)`,
    };
  }

  private handle(frame: OperationFrame): unknown {
    const handler = this.handler;
    // A hand-played peer trusts the frame's shape; a dispatcher checks it.
    return typeof handler === 'function'
      ? handler(frame as unknown as Message, this)
      : handler.call(frame.type, argumentsOf(frame), this);
  }

  private onFrame(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    let frame: Frame;
    try {
      frame = decodeFrame(data, isBinary);
    } catch (err) {
      const e = err as MinimrError;
      this.logger?.warn({ code: e.code, err: e.message, peer: this.label }, 'closing connection after a bad frame');
      this.emit('protocol-error', e);
      this.close(isBinary ? CLOSE_PROTOCOL_ERROR : CLOSE_UNSUPPORTED_DATA, `${e.code}: ${e.message}`);
      return;
    }
    if (frame.type === 'reply') {
      this.pending.settle(frame as ReplyFrame);
      return;
    }
    const message = frame as OperationFrame;
    if (typeof message.id === 'number') {
      const id = message.id;
      Promise.resolve()
        .then(() => this.handle(message))
        .then(
          (result) => this.send({ type: 'reply', re: id, ok: true, result: result ?? null }),
          (err: unknown) => this.send({ type: 'reply', re: id, ok: false, error: this.replyError(err, message.type) }),
        );
      return;
    }
    const eventFailed = (err: unknown): void => {
      const code = err instanceof MinimrError ? err.code : 'EINTERNAL';
      this.logger?.warn(
        { err: serializeError(err), code, type: message.type, peer: this.label || this.user },
        'event refused or failed',
      );
    };
    try {
      const r = this.handle(message);
      if (r instanceof Promise) r.catch(eventFailed);
    } catch (err) {
      eventFailed(err);
    }
  }
}

/**
 * The JobTracker's side of a new connection: sends the challenge and accepts nothing but a valid
 * `auth` until then (see auth.ts); then `dispatcher` takes over and `peer.user` is set. A wrong proof,
 * any other message first, or silence for AUTH_TIMEOUT_MS gets EAUTH and the connection closed.
 */
export function acceptPeer(
  socket: WebSocket,
  { secret, userKey }: PeerKeys,
  dispatcher: Dispatcher<RpcPeer> | RawHandler,
  logger?: Logger,
): RpcPeer {
  const serverNonce = newNonce();
  const refuse = (peer: RpcPeer, why: string): never => {
    logger?.warn({ why }, 'connection refused: not authenticated');
    // After the reply has been sent: the peer reads why before the socket closes.
    setImmediate(() => peer.close(CLOSE_AUTH_FAILED, `EAUTH: ${why}`));
    throw new MinimrError('EAUTH', why);
  };
  const gate: RawHandler = (message, peer) => {
    if (message.type !== 'auth') {
      return refuse(
        peer,
        `this JobTracker requires authentication before ` +
          `"${message.type}": prove you know the cluster secret (give the ` +
          `secret file with --secret-file or MINIMR_SECRET_FILE)`,
      );
    }
    let user: string;
    try {
      user = validateUserName(message.user);
    } catch (err) {
      return refuse(peer, (err as Error).message);
    }
    if (typeof message.nonce !== 'string' || !/^[0-9a-f]{32,128}$/.test(message.nonce))
      return refuse(peer, 'auth: the client nonce must be 32-128 hex digits');
    const via: AuthVia = message.via === 'credential' ? 'credential' : 'secret';
    const key = via === 'secret' ? secret : userKey(user);
    if (key === undefined) {
      return refuse(
        peer,
        `authentication failed for user ${user}: no such user, or revoked ` +
          '(the admin adds users with `minimr user add NAME`)',
      );
    }
    if (!proofMatches(authProof(key, 'client', serverNonce, message.nonce, user, via), message.proof)) {
      return refuse(
        peer,
        via === 'secret'
          ? `authentication failed for user ${user}: wrong cluster secret`
          : `authentication failed for user ${user}: wrong credential (it is not ${user}'s current key)`,
      );
    }
    clearTimeout(timer);
    peer.user = user;
    peer.authenticatedVia = via;
    peer.serve(dispatcher);
    peer.emit('authenticated', user);
    return {
      proof: authProof(key, 'server', serverNonce, message.nonce, user, via),
      user,
    } satisfies AuthResult;
  };
  const peer = new RpcPeer(socket, gate, logger);
  const timer = setTimeout(
    () => peer.close(CLOSE_AUTH_FAILED, `EAUTH: no authentication within ${AUTH_TIMEOUT_MS} ms`),
    AUTH_TIMEOUT_MS,
  );
  void peer.closed.then(() => clearTimeout(timer));
  peer.send({ type: 'hello', nonce: serverNonce });
  return peer;
}

/**
 * Opens a protocol connection to a JobTracker and authenticates it with the credentials given, or
 * those a JobTracker in this process lends; without any, the connection stays unauthenticated and
 * the JobTracker answers its first request with EAUTH. What the JobTracker sends is handed to
 * `handler` once the handshake is done.
 */
export async function connectPeer(
  url: string,
  handler: Dispatcher<RpcPeer> | RawHandler,
  logger?: Logger,
  timeoutMs = 10_000,
  security: PeerSecurity = {},
): Promise<RpcPeer> {
  const credentials = security.credentials ?? inProcessCredentials(url);
  let challenged!: (nonce: string) => void;
  const challenge = new Promise<string>((resolve) => (challenged = resolve));
  // A pinned authority is checked (and taken from the server's chain) before anything is sent.
  const ca = await authorityToTrust(url, security.tlsCa, security.tlsPin, timeoutMs);
  const socket = new WebSocket(url, {
    maxPayload: MAX_FRAME_BYTES,
    perMessageDeflate: false,
    handshakeTimeout: timeoutMs,
    ...(ca ? { ca } : {}),
  });
  // Listening before the socket opens: the challenge may come in the same packet as the upgrade.
  const awaitHello: RawHandler = (message, p) => {
    if (message.type === 'hello') {
      challenged(String(message.nonce));
      p.serve(handler);
      return undefined;
    }
    throw new MinimrError('EPROTOCOL', `"${message.type}" before the JobTracker's challenge`);
  };
  const peer = new RpcPeer(socket, awaitHello, logger);
  // A challenge this side cannot read (another protocol version) closes the link: the handshake says why at once.
  const unreadable = new Promise<never>((_, reject) =>
    peer.once('protocol-error', (err: MinimrError) =>
      reject(
        err.code === 'EVERSION'
          ? new MinimrError(
              'EVERSION',
              `the JobTracker at ${url} speaks another protocol: ${err.message}; ` +
                `run the same minimr version on the JobTracker, its workers and clients`,
              { ...err.details, url },
            )
          : new MinimrError('EPROTOCOL', `the server at ${url} is not a minimr JobTracker: ${err.message}`, { url }),
      ),
    ),
  );
  unreadable.catch(() => undefined);
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => {
      socket.off('open', onOpen);
      reject(
        new MinimrError('ECONNECT', `cannot reach the JobTracker at ${url}: ${err.message}. Is it running?`, { url }),
      );
    };
    const onOpen = () => {
      socket.off('error', onError);
      resolve();
    };
    socket.once('error', onError);
    socket.once('open', onOpen);
  });
  if (credentials) {
    try {
      await authenticate(
        peer,
        credentials,
        Promise.race([challenge, unreadable]),
        url,
        Math.max(timeoutMs, AUTH_TIMEOUT_MS),
      );
    } catch (err) {
      peer.close(1000, 'authentication failed');
      throw err;
    }
  }
  return peer;
}

async function authenticate(
  peer: RpcPeer,
  credentials: Credentials,
  challenge: Promise<string>,
  url: string,
  timeoutMs: number,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const serverNonce = await Promise.race([
    challenge,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new MinimrError(
              'EAUTH',
              `the server at ${url} sent no authentication challenge ` +
                `within ${timeoutMs} ms: is it a minimr JobTracker of this ` +
                `version?`,
              { url },
            ),
          ),
        timeoutMs,
      );
    }),
  ]).finally(() => clearTimeout(timer));
  const clientNonce = newNonce();
  const via = credentials.via ?? 'secret';
  const result = await peer.request<AuthResult>(
    {
      type: 'auth',
      user: credentials.user,
      nonce: clientNonce,
      proof: authProof(credentials.secret, 'client', serverNonce, clientNonce, credentials.user, via),
      ...(via === 'credential' ? { via } : {}),
    },
    timeoutMs,
  );
  const expected = authProof(credentials.secret, 'server', serverNonce, clientNonce, credentials.user, via);
  if (!proofMatches(expected, result?.proof)) {
    throw new MinimrError(
      'EAUTH',
      `the server at ${url} did not prove it knows the ${via === 'secret' ? 'cluster secret' : 'credential'}: ` +
        "it is not this cluster's JobTracker",
      { url },
    );
  }
}

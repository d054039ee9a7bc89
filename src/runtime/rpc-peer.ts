import { EventEmitter } from 'node:events';
import { WebSocket } from 'ws';
import { MinimrError, deserializeError, serializeError } from '../errors.js';
import type { Logger } from '../log.js';
import { decodeFrame, encodeFrame } from './frame-codec.js';
import { MAX_FRAME_BYTES, PROTOCOL_VERSION, type Message, type Outgoing, type Reply } from './protocol.js';

/** Close codes (RFC 6455) used when a peer misbehaves. */
export const CLOSE_PROTOCOL_ERROR = 1002;
export const CLOSE_UNSUPPORTED_DATA = 1003;

type RequestMessage = Extract<Message, { id: number }>;
type EventMessage = Exclude<Message, RequestMessage | Reply>;

/** Answers a request (return value or thrown error become the reply) or handles an event. */
export type MessageHandler = (message: RequestMessage | EventMessage, peer: RpcPeer) => unknown;

interface PendingRequest {
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer?: NodeJS.Timeout;
}

/**
 * One end of a protocol connection: framing, request/reply correlation, and the rule that a
 * malformed frame closes this connection only.
 */
export class RpcPeer extends EventEmitter {
  readonly socket: WebSocket;
  private readonly pending = new Map<number, PendingRequest>();
  private nextId = 1;
  private handler: MessageHandler;
  private readonly logger?: Logger;
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Free slot for the owner (e.g. the worker id once registered). */
  label = '';

  constructor(socket: WebSocket, handler: MessageHandler, logger?: Logger) {
    super();
    this.socket = socket;
    this.handler = handler;
    this.logger = logger;
    this.closed = new Promise((resolve) => {
      socket.once('close', (code: number, reason: Buffer) => {
        const why = reason.toString();
        for (const [, p] of this.pending) {
          if (p.timer) clearTimeout(p.timer);
          p.reject(new MinimrError('ECONNECT', `connection closed before a reply arrived (${code}${why ? `: ${why}` : ''})`));
        }
        this.pending.clear();
        resolve({ code, reason: why });
      });
    });
    socket.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => this.onFrame(data, isBinary));
    socket.on('error', (err) => {
      this.logger?.warn({ err: err.message, peer: this.label }, 'socket error');
    });
  }

  setHandler(handler: MessageHandler): void {
    this.handler = handler;
  }

  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  send<M extends Message>(message: Outgoing<M>): void {
    if (!this.isOpen) return;
    this.socket.send(encodeFrame({ v: PROTOCOL_VERSION, ...message } as unknown as Message));
  }

  request<T>(message: Outgoing<RequestMessage>, timeoutMs = 0): Promise<T> {
    if (!this.isOpen) return Promise.reject(new MinimrError('ECONNECT', 'connection is closed'));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const pending: PendingRequest = { resolve: resolve as (v: unknown) => void, reject };
      if (timeoutMs > 0) {
        pending.timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new MinimrError('ETIMEOUT', `no reply to "${message.type}" within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      this.pending.set(id, pending);
      this.socket.send(encodeFrame({ v: PROTOCOL_VERSION, id, ...message } as unknown as Message));
    });
  }

  close(code = 1000, reason = ''): void {
    // Close reasons are limited to 123 bytes by RFC 6455.
    const short = Buffer.from(reason).subarray(0, 120).toString();
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) this.socket.close(code, short);
  }

  terminate(): void {
    this.socket.terminate();
  }

  private onFrame(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    let message: Message;
    try {
      message = decodeFrame(data, isBinary);
    } catch (err) {
      const e = err as MinimrError;
      this.logger?.warn({ code: e.code, err: e.message, peer: this.label }, 'closing connection after a bad frame');
      this.emit('protocol-error', e);
      this.close(isBinary ? CLOSE_PROTOCOL_ERROR : CLOSE_UNSUPPORTED_DATA, `${e.code}: ${e.message}`);
      return;
    }
    if (message.type === 'reply') {
      const pending = this.pending.get(message.re);
      if (!pending) return;
      this.pending.delete(message.re);
      if (pending.timer) clearTimeout(pending.timer);
      if (message.ok) pending.resolve(message.result);
      else pending.reject(deserializeError(message.error));
      return;
    }
    if ('id' in message && typeof message.id === 'number') {
      const id = message.id;
      Promise.resolve()
        .then(() => this.handler(message, this))
        .then(
          (result) => this.send<Reply>({ type: 'reply', re: id, ok: true, result: result ?? null }),
          (err: unknown) => this.send<Reply>({ type: 'reply', re: id, ok: false, error: serializeError(err) }),
        );
      return;
    }
    try {
      const r = this.handler(message as EventMessage, this);
      if (r instanceof Promise) r.catch((err: unknown) => this.logger?.error({ err, type: message.type }, 'event handler failed'));
    } catch (err) {
      this.logger?.error({ err, type: message.type }, 'event handler failed');
    }
  }
}

/** Opens a protocol connection to a JobTracker. */
export async function connectPeer(url: string, handler: MessageHandler, logger?: Logger, timeoutMs = 10_000): Promise<RpcPeer> {
  const socket = new WebSocket(url, { maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false, handshakeTimeout: timeoutMs });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => {
      socket.off('open', onOpen);
      reject(new MinimrError('ECONNECT', `cannot reach the JobTracker at ${url}: ${err.message}. Is it running?`, { url }));
    };
    const onOpen = () => {
      socket.off('error', onError);
      resolve();
    };
    socket.once('error', onError);
    socket.once('open', onOpen);
  });
  return new RpcPeer(socket, handler, logger);
}

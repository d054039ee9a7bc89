/**
 * The JobTracker's one port: WebSocket links (clients and workers, each authenticated before its
 * first operation) and HTTP (the JSON API, `/metrics`, the web pages its entry point plugs in).
 * Both hand every operation to a dispatcher over the protocol tables: the WebSocket one serves the
 * client and worker tables, the HTTP one the client table, with the same functions.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../../log.js';
import {
  CLIENT_PROTOCOL,
  Dispatcher,
  MAX_FRAME_BYTES,
  WORKER_TO_JOBTRACKER,
  acceptPeer,
  webUser,
  type Authority,
  type CallRecord,
  type ClientProtocol,
  type Handlers,
  type PeerKeys,
  type Role,
  type RpcPeer,
  type WorkerToJobTracker,
} from '../wire/index.js';
import { ApiV1, type HttpCaller } from './api-v1.js';
import { PROMETHEUS_CONTENT_TYPE } from './prometheus.js';
import { WebHdfsServer } from './webhdfs-server.js';

/** Serves a request the endpoint does not know (the web pages); false when it does not either. */
export type HttpPages = (req: IncomingMessage, res: ServerResponse) => boolean;

export interface EndpointParts {
  readonly logger: Logger;
  readonly authority: Authority;
  readonly clientHandlers: Handlers<ClientProtocol, unknown>;
  readonly workerHandlers: Handlers<WorkerToJobTracker, RpcPeer>;
  /** Whether a connection is a live registered worker's (the `worker` role). */
  isWorkerPeer(peer: RpcPeer): boolean;
  /** A new connection, before it authenticated. */
  connected(peer: RpcPeer, remoteAddress: string | undefined): void;
  metricsText(): string;
  readonly pages?: HttpPages;
  /** The block store's WebHDFS server (`/webhdfs/v1/...`), which authenticates as this port does. */
  readonly webhdfs?: WebHdfsServer;
  /** Told of each client operation once it has ended, with the caller's address (the audit log). */
  audit?(record: CallRecord<unknown>, address: string): void;
  /** Connections one address may hold before they authenticate (default DEFAULT_MAX_UNAUTHENTICATED_PER_ADDRESS). */
  readonly maxUnauthenticatedPerAddress?: number;
}

/**
 * Unauthenticated connections one address may hold at once: each costs a socket and a timer until it
 * proves the secret or times out, so an address that opens many without authenticating is refused
 * past this many (HTTP 429 before the WebSocket upgrade); authenticated connections do not count.
 */
export const DEFAULT_MAX_UNAUTHENTICATED_PER_ADDRESS = 64;

/** The roles a connection's proof and registration give it (dispatch.ts authorizes rows by them). */
function peerRoles(peer: RpcPeer, registeredWorker: boolean): Set<Role> {
  const roles = new Set<Role>();
  if (peer.authenticatedVia === 'secret') roles.add('daemon');
  if (registeredWorker) roles.add('worker');
  return roles;
}

export class TrackerEndpoint {
  private httpServer?: Server;
  private wss?: WebSocketServer;
  private readonly websocket: Dispatcher<RpcPeer>;
  private readonly api: ApiV1;
  /** Connections not yet authenticated, by remote address. */
  private readonly unauthenticated = new Map<string, number>();
  /** Where each WebSocket connection comes from, for the audit log. */
  private readonly addresses = new WeakMap<RpcPeer, string>();
  port = 0;

  constructor(private readonly parts: EndpointParts) {
    this.websocket = new Dispatcher<RpcPeer>(
      'a JobTracker',
      (peer) => ({ user: peer.user, roles: peerRoles(peer, parts.isWorkerPeer(peer)) }),
      parts.authority,
    )
      .serve(CLIENT_PROTOCOL, parts.clientHandlers)
      .serve(WORKER_TO_JOBTRACKER, parts.workerHandlers)
      .observe((record) => {
        if (Object.hasOwn(CLIENT_PROTOCOL, record.operation))
          parts.audit?.(record, this.addresses.get(record.peer) ?? '');
      });
    const http = new Dispatcher<HttpCaller>(
      'the JobTracker API',
      (caller) => ({ user: caller.user, roles: new Set() }),
      parts.authority,
    )
      .serve(CLIENT_PROTOCOL, parts.clientHandlers)
      .observe((record) => parts.audit?.(record, record.peer.address ?? ''));
    this.api = new ApiV1(http, parts.logger);
  }

  async listen(
    host: string,
    port: number,
    keys: PeerKeys,
    webPassword: string,
    tls?: { readonly cert: Buffer; readonly key: Buffer },
  ): Promise<void> {
    const onRequest = (req: IncomingMessage, res: ServerResponse): void =>
      this.onHttpRequest(req, res, webPassword, keys.userKey);
    this.httpServer = tls ? createTlsServer({ cert: tls.cert, key: tls.key }, onRequest) : createServer(onRequest);
    this.wss = new WebSocketServer({
      server: this.httpServer,
      maxPayload: MAX_FRAME_BYTES,
      perMessageDeflate: false,
      verifyClient: (info, done) => this.admitUnauthenticated(info.req, done),
    });
    this.wss.on('connection', (socket: WebSocket, req: IncomingMessage) => {
      const peer = acceptPeer(socket, keys, this.websocket, this.parts.logger);
      this.countUnauthenticated(peer, req.socket.remoteAddress ?? '');
      this.addresses.set(peer, req.socket.remoteAddress ?? '');
      this.parts.connected(peer, req.socket.remoteAddress);
    });
    await new Promise<void>((resolve, reject) => {
      this.httpServer!.once('error', reject);
      // The WebSocketServer re-emits its server's errors: a port in use would otherwise be an
      // unhandled 'error' event (a crash with a Node stack) instead of this rejection.
      this.wss!.once('error', reject);
      this.httpServer!.listen(port, host, () => resolve());
    });
    const addr = this.httpServer.address();
    this.port = typeof addr === 'object' && addr ? addr.port : port;
  }

  /** Refuses the upgrade of an address already holding its share of unauthenticated connections. */
  private admitUnauthenticated(
    req: IncomingMessage,
    done: (admit: boolean, status?: number, message?: string) => void,
  ): void {
    const from = req.socket.remoteAddress ?? '';
    const limit = this.parts.maxUnauthenticatedPerAddress ?? DEFAULT_MAX_UNAUTHENTICATED_PER_ADDRESS;
    const held = this.unauthenticated.get(from) ?? 0;
    if (held < limit) {
      done(true);
      return;
    }
    this.parts.logger.warn({ from, held, limit }, 'connection refused: too many unauthenticated connections');
    done(false, 429, `too many unauthenticated connections from ${from} (at most ${limit})`);
  }

  /** Counts `peer` against its address until it authenticates or closes. */
  private countUnauthenticated(peer: RpcPeer, from: string): void {
    this.unauthenticated.set(from, (this.unauthenticated.get(from) ?? 0) + 1);
    let counted = true;
    const release = (): void => {
      if (!counted) return;
      counted = false;
      const left = (this.unauthenticated.get(from) ?? 1) - 1;
      if (left > 0) this.unauthenticated.set(from, left);
      else this.unauthenticated.delete(from);
    };
    peer.once('authenticated', release);
    void peer.closed.then(release);
  }

  async close(): Promise<void> {
    if (this.wss) {
      for (const client of this.wss.clients) client.terminate();
      await new Promise<void>((resolve) => this.wss!.close(() => resolve()));
    }
    if (this.httpServer) await new Promise<void>((resolve) => this.httpServer!.close(() => resolve()));
  }

  private onHttpRequest(
    req: IncomingMessage,
    res: ServerResponse,
    webPassword: string,
    userKey: PeerKeys['userKey'],
  ): void {
    const url = new URL(req.url ?? '/', 'http://jobtracker');
    // The pages and the API show every job, path and log of the cluster: like the RPC port, nothing without the secret.
    const user = webUser(req.headers.authorization, webPassword, userKey);
    if (this.parts.webhdfs && WebHdfsServer.handles(url.pathname)) {
      // The same credentials; it answers their absence in WebHDFS's error format, and takes the
      // signed grant of its own redirects (OPEN's and CREATE's second step) in their place.
      this.parts.webhdfs.handle(req, res, url, user, (name) => userKey(name)?.toString('base64url') ?? webPassword);
      return;
    }
    if (user === undefined) {
      const api = url.pathname.startsWith('/api/');
      res
        .writeHead(401, {
          'www-authenticate': 'Basic realm="minimr", charset="UTF-8"',
          'content-type': api ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8',
        })
        .end(
          api
            ? JSON.stringify({
                error: {
                  code: 'EAUTH',
                  message:
                    'sign in with HTTP Basic: any user name (the user you act as) ' +
                    'and the web password, which `minimr web-password` prints',
                },
              })
            : 'minimr JobTracker: sign in with any user name and the web ' +
                'password, which `minimr web-password` prints\n',
        );
      return;
    }
    if (url.pathname === '/metrics' && (req.method === 'GET' || req.method === 'HEAD')) {
      res
        .writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE })
        .end(req.method === 'HEAD' ? undefined : this.parts.metricsText());
      return;
    }
    if (this.api.handle(req, res, url, { user, address: req.socket.remoteAddress ?? '' })) return;
    if (this.parts.pages?.(req, res)) return;
    res
      .writeHead(426, { 'content-type': 'text/plain' })
      .end('minimr JobTracker: connect with the minimr protocol over WebSocket\n');
  }
}

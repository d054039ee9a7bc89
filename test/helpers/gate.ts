import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The gate the gated-wordcount fixture's attempts wait at (`GET url?attempt=ID`): it answers none
 * until opened. `held` are the attempts whose requests it holds; `gone`, those whose connection closed
 * unanswered (their task process ended).
 */
export interface Gate {
  readonly url: string;
  readonly held: ReadonlyMap<string, unknown>;
  readonly gone: ReadonlySet<string>;
  open(): void;
  close(): Promise<void>;
}

export async function startGate(): Promise<Gate> {
  const held = new Map<string, ServerResponse>();
  const gone = new Set<string>();
  let opened = false;
  const answer = (res: ServerResponse) => res.writeHead(200, { connection: 'close' }).end('open');
  const server = createServer((req, res) => {
    if (opened) return void answer(res);
    const attempt = new URL(req.url ?? '/', 'http://gate').searchParams.get('attempt') ?? '?';
    held.set(attempt, res);
    res.on('close', () => {
      held.delete(attempt);
      if (!res.writableEnded) gone.add(attempt);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/gate`,
    held,
    gone,
    open() {
      opened = true;
      for (const res of held.values()) answer(res);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

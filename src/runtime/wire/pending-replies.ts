import { MinimrError, deserializeError } from '../../errors.js';
import type { ReplyFrame } from './frames.js';

/**
 * The requests a link has sent and not yet had answered, by id: one bookkeeping for the WebSocket
 * links (rpc-peer.ts) and the task link (ipc-link.ts). An answer settles its request; a timeout or
 * the link's end fails it.
 */
export class PendingReplies {
  private readonly pending = new Map<
    number,
    { resolve(v: unknown): void; reject(e: Error): void; timer?: NodeJS.Timeout }
  >();
  private nextId = 1;

  /** A new request id and the promise of its answer; `timeoutMs` > 0 fails it with ETIMEOUT after that long. */
  open(type: string, timeoutMs = 0): { id: number; answer: Promise<unknown> } {
    const id = this.nextId++;
    const answer = new Promise<unknown>((resolve, reject) => {
      const entry: { resolve(v: unknown): void; reject(e: Error): void; timer?: NodeJS.Timeout } = { resolve, reject };
      if (timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new MinimrError('ETIMEOUT', `no reply to "${type}" within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      this.pending.set(id, entry);
    });
    return { id, answer };
  }

  /** Settles the request a reply answers; a reply to no open request is ignored. */
  settle(reply: ReplyFrame): void {
    const entry = this.pending.get(reply.re);
    if (!entry) return;
    this.pending.delete(reply.re);
    if (entry.timer) clearTimeout(entry.timer);
    if (reply.ok) entry.resolve(reply.result);
    else entry.reject(deserializeError(reply.error));
  }

  /** Fails every open request: the link ended. */
  failAll(err: MinimrError): void {
    for (const entry of this.pending.values()) {
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(err);
    }
    this.pending.clear();
  }
}

/**
 * Typed callers made from a table: `stub.heartbeat({ workerId, attempts })` sends the event,
 * `await stub['job-status']({ jobId })` sends the request and resolves with its answer. The frame's
 * arguments are the row's, so a caller's mistake is a compile error here, and the other side's
 * dispatcher checks them again.
 */
import type { ArgsOf, Operation, ResultOf, Table } from './operations.js';

/** What a stub sends through: a link that can send events and requests by operation name. */
export interface Link {
  /** Sends a request and resolves with its answer. */
  call(type: string, args: object, timeoutMs?: number): Promise<unknown>;
  /** Sends an event; a link that can tell when it has handed the event over returns that promise. */
  tell(type: string, args: object): void | Promise<void>;
}

export type Stub<T extends Table> = {
  readonly [K in keyof T]: T[K]['result'] extends null
    ? (args: ArgsOf<T[K]>) => void | Promise<void>
    : (args: ArgsOf<T[K]>, timeoutMs?: number) => Promise<ResultOf<T[K]>>;
};

/** A stub over whichever link `link()` returns at the time of each call (a client may reconnect). */
export function stubOf<T extends Table>(table: T, link: () => Link): Stub<T> {
  const stub: Record<string, unknown> = {};
  for (const [name, op] of Object.entries(table) as [string, Operation][]) {
    stub[name] =
      op.result === null
        ? (args: object) => link().tell(name, withoutUndefined(args))
        : (args: object, timeoutMs?: number) => link().call(name, withoutUndefined(args), timeoutMs);
  }
  return stub as Stub<T>;
}

/** msgpack and JSON carry no undefined; an optional field left undefined is left out. */
function withoutUndefined(args: object): object {
  return Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined));
}

/**
 * The frames of every link, whatever carries them (msgpack over WebSocket, Node's IPC channel):
 * `{ v: PROTOCOL_VERSION, type, id?, ...arguments }`, a request's answer
 * `{ v, type: 'reply', re: id, ok, result | error }`. checkFrame takes a decoded value as a frame
 * of the given operations: a plain object at our version, of a type some table declares, with a
 * numeric `id` when it is a request; an event's arguments (and the handshake's) are checked here,
 * so that a malformed one closes its connection; a request's arguments are checked by the
 * dispatcher once the connection has authenticated, and a bad one is answered with the error.
 */
import { MinimrError, type SerializedError } from '../../errors.js';
import { HANDSHAKE } from './handshake.js';
import type { Operation, Table } from './operations.js';

export const PROTOCOL_VERSION = 2;
/** Control frames are small; bulk data goes over the workers' HTTP data ports. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** A request or an event: the operation's name and its arguments, flat. */
export interface OperationFrame {
  readonly v: number;
  readonly type: string;
  readonly id?: number;
  readonly [field: string]: unknown;
}
export type ReplyFrame =
  | { readonly v: number; readonly type: 'reply'; readonly re: number; readonly ok: true; readonly result: unknown }
  | {
      readonly v: number;
      readonly type: 'reply';
      readonly re: number;
      readonly ok: false;
      readonly error: SerializedError;
    };
export type Frame = OperationFrame | ReplyFrame;

export function operationsOf(...tables: Table[]): ReadonlyMap<string, Operation> {
  const all = new Map<string, Operation>();
  for (const t of tables) {
    for (const [name, op] of Object.entries(t)) {
      if (all.has(name)) throw new Error(`operation ${name} is declared by two tables of one transport`);
      all.set(name, op);
    }
  }
  return all;
}

/** The fields of a frame that are its arguments. */
export function argumentsOf(frame: OperationFrame): Record<string, unknown> {
  const { v: _v, type: _type, id: _id, ...rest } = frame;
  return rest;
}

/**
 * Checks a decoded value as a frame of these operations: envelope, type, request id, and the
 * arguments of events and of the handshake.
 */
export function checkFrame(decoded: unknown, operations: ReadonlyMap<string, Operation>): Frame {
  if (typeof decoded !== 'object' || decoded === null || Array.isArray(decoded)) {
    throw new MinimrError('EPROTOCOL', 'frame must be a msgpack map');
  }
  const frame = decoded as Record<string, unknown>;
  if (frame.v !== PROTOCOL_VERSION) {
    throw new MinimrError(
      'EVERSION',
      `protocol version ${String(frame.v)} is not supported; this peer speaks version ${PROTOCOL_VERSION}`,
      {
        got: typeof frame.v === 'number' ? frame.v : String(frame.v),
        expected: PROTOCOL_VERSION,
      },
    );
  }
  const type = frame.type;
  if (type === 'reply') return checkReply(frame);
  const op = typeof type === 'string' ? operations.get(type) : undefined;
  if (typeof type !== 'string' || !op)
    throw new MinimrError('EPROTOCOL', `unknown message type ${JSON.stringify(type)}`);
  const isRequest = op.result !== null;
  if (isRequest && typeof frame.id !== 'number') {
    throw new MinimrError(
      'EPROTOCOL',
      `message "${type}": field "id" must be number, got ${frame.id === undefined ? 'nothing' : typeof frame.id}`,
    );
  }
  if (!isRequest || Object.hasOwn(HANDSHAKE, type))
    op.validator.parse(argumentsOf(frame as OperationFrame), { operation: type });
  return frame as OperationFrame;
}

function checkReply(frame: Record<string, unknown>): ReplyFrame {
  if (typeof frame.re !== 'number') throw new MinimrError('EPROTOCOL', 'message "reply": field "re" must be number');
  if (typeof frame.ok !== 'boolean') throw new MinimrError('EPROTOCOL', 'message "reply": field "ok" must be boolean');
  if (!frame.ok) {
    const error = frame.error as Record<string, unknown> | undefined;
    if (
      typeof error !== 'object' ||
      error === null ||
      typeof error.code !== 'string' ||
      typeof error.message !== 'string'
    ) {
      throw new MinimrError('EPROTOCOL', 'message "reply": field "error" must be an object with a code and a message');
    }
  }
  return frame as unknown as ReplyFrame;
}

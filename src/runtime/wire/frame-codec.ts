import { Packr } from 'msgpackr';
import { MinimrError, type SerializedError } from '../../errors.js';
import { CLIENT_PROTOCOL } from './client-protocol.js';
import { HANDSHAKE } from './handshake.js';
import type { Operation, Table } from './operations.js';
import { JOBTRACKER_TO_WORKER, WORKER_TO_JOBTRACKER } from './worker-protocol.js';

/**
 * Encodes and checks the frames of the WebSocket links. A frame from the network is hostile until
 * proven otherwise: it must be binary, decode as msgpack, be a plain object at our version, of a
 * type some protocol table declares, with a numeric `id` when it is a request. Anything else is an
 * EPROTOCOL (or EVERSION) error, and the connection that sent it is closed; nothing else is affected.
 *
 * Every frame is `{ v: PROTOCOL_VERSION, type, id?, ...arguments }`; a request's answer is
 * `{ v, type: 'reply', re: id, ok, result | error }`. An event's arguments (and the handshake's) are
 * checked here, so that a malformed one closes its connection; a request's arguments are checked by
 * the dispatcher once the connection has authenticated, and a bad one is answered with the error.
 */

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
  | { readonly v: number; readonly type: 'reply'; readonly re: number; readonly ok: false; readonly error: SerializedError };
export type Frame = OperationFrame | ReplyFrame;

/** Every operation the WebSocket links carry, by name: names are unique across their tables. */
export const WEBSOCKET_OPERATIONS: ReadonlyMap<string, Operation> = operationsOf(HANDSHAKE, CLIENT_PROTOCOL, WORKER_TO_JOBTRACKER, JOBTRACKER_TO_WORKER);

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

// Plain msgpack, no records/structures extension: every peer must decode every frame on its own.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });

export function encodeFrame(frame: Frame): Buffer {
  return packr.pack(frame);
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
export function checkFrame(decoded: unknown, operations: ReadonlyMap<string, Operation> = WEBSOCKET_OPERATIONS): Frame {
  if (typeof decoded !== 'object' || decoded === null || Array.isArray(decoded)) {
    throw new MinimrError('EPROTOCOL', 'frame must be a msgpack map');
  }
  const frame = decoded as Record<string, unknown>;
  if (frame.v !== PROTOCOL_VERSION) {
    throw new MinimrError('EVERSION', `protocol version ${String(frame.v)} is not supported; this peer speaks version ${PROTOCOL_VERSION}`, {
      got: typeof frame.v === 'number' ? frame.v : String(frame.v),
      expected: PROTOCOL_VERSION,
    });
  }
  const type = frame.type;
  if (type === 'reply') return checkReply(frame);
  const op = typeof type === 'string' ? operations.get(type) : undefined;
  if (typeof type !== 'string' || !op) throw new MinimrError('EPROTOCOL', `unknown message type ${JSON.stringify(type)}`);
  const isRequest = op.result !== null;
  if (isRequest && typeof frame.id !== 'number') {
    throw new MinimrError('EPROTOCOL', `message "${type}": field "id" must be number, got ${frame.id === undefined ? 'nothing' : typeof frame.id}`);
  }
  if (!isRequest || Object.hasOwn(HANDSHAKE, type)) op.validator.parse(argumentsOf(frame as OperationFrame), { operation: type });
  return frame as OperationFrame;
}

function checkReply(frame: Record<string, unknown>): ReplyFrame {
  if (typeof frame.re !== 'number') throw new MinimrError('EPROTOCOL', 'message "reply": field "re" must be number');
  if (typeof frame.ok !== 'boolean') throw new MinimrError('EPROTOCOL', 'message "reply": field "ok" must be boolean');
  if (!frame.ok) {
    const error = frame.error as Record<string, unknown> | undefined;
    if (typeof error !== 'object' || error === null || typeof error.code !== 'string' || typeof error.message !== 'string') {
      throw new MinimrError('EPROTOCOL', 'message "reply": field "error" must be an object with a code and a message');
    }
  }
  return frame as unknown as ReplyFrame;
}

export function decodeFrame(data: Buffer | ArrayBuffer | Buffer[], isBinary = true): Frame {
  if (!isBinary) throw new MinimrError('EPROTOCOL', 'text frames are not part of the minimr protocol; frames are binary msgpack');
  const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
  if (bytes.length === 0) throw new MinimrError('EPROTOCOL', 'empty frame');
  if (bytes.length > MAX_FRAME_BYTES) {
    throw new MinimrError('EPROTOCOL', `frame of ${bytes.length} bytes exceeds the ${MAX_FRAME_BYTES}-byte limit`);
  }
  let decoded: unknown;
  try {
    decoded = packr.unpack(bytes);
  } catch (err) {
    throw new MinimrError('EPROTOCOL', `frame is not valid msgpack: ${(err as Error).message}`);
  }
  return checkFrame(decoded);
}

import { Packr } from 'msgpackr';
import { MinimrError } from '../../errors.js';
import { MAX_FRAME_BYTES, PROTOCOL_VERSION, type Message, type MessageType } from './protocol.js';

/**
 * Encodes and checks frames. A frame from the network is hostile until proven otherwise: it must be
 * binary, decode as msgpack, be a plain object of a known type at our version, and have the fields
 * its type declares with the right primitive types. Anything else is an EPROTOCOL (or EVERSION)
 * error, and the connection that sent it is closed; nothing else is affected.
 */

// Plain msgpack, no records/structures extension: every peer must decode every frame on its own.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });

type FieldKind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'any';
type Shape = Readonly<Record<string, FieldKind | `${FieldKind}?`>>;

/** Required fields per message type; the static types in protocol.ts are the full description. */
export const MESSAGE_SHAPES: Readonly<Record<MessageType, Shape>> = {
  hello: { nonce: 'string' },
  auth: { id: 'number', user: 'string', nonce: 'string', proof: 'string' },
  register: { id: 'number', worker: 'object', blockIds: 'array', mapOutputs: 'array?' },
  heartbeat: { workerId: 'string', attempts: 'array' },
  'attempt-finished': { workerId: 'string', attemptId: 'string', state: 'string', counters: 'object', error: 'object?', mapOutput: 'object?' },
  'block-replicated': { workerId: 'string', blockId: 'string', targets: 'array' },
  'get-job-module': { id: 'number', jobId: 'string' },
  launch: { attempt: 'object' },
  kill: { attemptId: 'string', reason: 'string' },
  'delete-blocks': { blockIds: 'array' },
  'replicate-block': { blockId: 'string', targets: 'array', token: 'string' },
  'verify-blocks': { blocks: 'array' },
  'replica-corrupt': { workerId: 'string', blockId: 'string', reason: 'string' },
  'cleanup-job': { jobId: 'string' },
  'map-outputs': { attemptId: 'string', available: 'array', lost: 'array' },
  'submit-job': { id: 'number', job: 'object' },
  'job-status': { id: 'number', jobId: 'string' },
  'list-jobs': { id: 'number', all: 'boolean?' },
  'job-attempts': { id: 'number', jobId: 'string' },
  'kill-job': { id: 'number', jobId: 'string' },
  'wait-job': { id: 'number', jobId: 'string' },
  'cluster-info': { id: 'number' },
  'job-profiles': { id: 'number', job: 'string?' },
  'import-profile': { id: 'number', job: 'string', profile: 'object' },
  'remove-profile': { id: 'number', job: 'string' },
  'attempt-log': { id: 'number', attemptId: 'string', stream: 'string', offset: 'number?', length: 'number?' },
  mrc: { id: 'number', op: 'string', args: 'array' },
  fsck: { id: 'number', path: 'string?' },
  fs: { id: 'number', op: 'string', args: 'array', jobId: 'string?' },
  reply: { re: 'number', ok: 'boolean', result: 'any', error: 'object?' },
};

export function encodeFrame(message: Message): Buffer {
  return packr.pack(message);
}

function kindOf(value: unknown): FieldKind {
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  if (t === 'string' || t === 'number' || t === 'boolean') return t;
  if (t === 'object' && value !== null) return 'object';
  return 'any';
}

export function decodeFrame(data: Buffer | ArrayBuffer | Buffer[], isBinary = true): Message {
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
  if (typeof type !== 'string' || !Object.hasOwn(MESSAGE_SHAPES, type)) {
    throw new MinimrError('EPROTOCOL', `unknown message type ${JSON.stringify(type)}`);
  }
  const shape = MESSAGE_SHAPES[type as MessageType];
  for (const [field, spec] of Object.entries(shape)) {
    const optional = spec.endsWith('?');
    const want = (optional ? spec.slice(0, -1) : spec) as FieldKind;
    const value = frame[field];
    if (value === undefined || value === null) {
      if (optional || want === 'any') continue;
      throw new MinimrError('EPROTOCOL', `message "${type}" lacks field "${field}"`);
    }
    if (want !== 'any' && kindOf(value) !== want) {
      throw new MinimrError('EPROTOCOL', `message "${type}": field "${field}" must be ${want}, got ${kindOf(value)}`);
    }
  }
  return frame as unknown as Message;
}

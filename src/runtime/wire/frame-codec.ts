import { Packr } from 'msgpackr';
import { MinimrError } from '../../errors.js';
import { CLIENT_PROTOCOL } from './client-protocol.js';
import { MAX_FRAME_BYTES, checkFrame, operationsOf, type Frame } from './frames.js';
import { HANDSHAKE } from './handshake.js';
import type { Operation } from './operations.js';
import { JOBTRACKER_TO_WORKER, WORKER_TO_JOBTRACKER } from './worker-protocol.js';

/**
 * Encodes and checks the frames of the WebSocket links. A frame from the network is hostile until
 * proven otherwise: it must be binary, decode as msgpack, and be a frame (frames.ts) of one of the
 * WebSocket links' operations. Anything else is an EPROTOCOL (or EVERSION) error, and the
 * connection that sent it is closed; nothing else is affected.
 */

/** Every operation the WebSocket links carry, by name: names are unique across their tables. */
export const WEBSOCKET_OPERATIONS: ReadonlyMap<string, Operation> = operationsOf(
  HANDSHAKE,
  CLIENT_PROTOCOL,
  WORKER_TO_JOBTRACKER,
  JOBTRACKER_TO_WORKER,
);

// Plain msgpack, no records/structures extension: every peer must decode every frame on its own.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });

export function encodeFrame(frame: Frame): Buffer {
  return packr.pack(frame);
}

export function decodeFrame(data: Buffer | ArrayBuffer | Buffer[], isBinary = true): Frame {
  if (!isBinary)
    throw new MinimrError('EPROTOCOL', 'text frames are not part of the minimr protocol; frames are binary msgpack');
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
  return checkFrame(decoded, WEBSOCKET_OPERATIONS);
}

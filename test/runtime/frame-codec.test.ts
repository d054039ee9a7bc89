import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pack } from 'msgpackr';
import { MinimrError } from '../../src/errors.js';
import { decodeFrame, encodeFrame, MAX_FRAME_BYTES, PROTOCOL_VERSION } from '../../src/runtime/index.js';

function expectCode(fn: () => unknown, code: string, pattern?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof MinimrError, `expected a MinimrError, got ${String(err)}`);
    assert.equal(err.code, code);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

describe('frame codec', () => {
  it('round-trips every field of a request', () => {
    const frame = encodeFrame({
      v: PROTOCOL_VERSION,
      type: 'fs-create',
      id: 7,
      path: '/a',
      replication: 2,
      favoredWorkers: ['w1'],
    });
    assert.deepEqual(decodeFrame(frame), {
      v: PROTOCOL_VERSION,
      type: 'fs-create',
      id: 7,
      path: '/a',
      replication: 2,
      favoredWorkers: ['w1'],
    });
  });

  it('round-trips binary payloads and nested objects', () => {
    const msg = {
      v: PROTOCOL_VERSION,
      type: 'heartbeat',
      workerId: 'w1',
      attempts: [{ attemptId: 'a', progress: 0.5, counters: { X: 3 } }],
    };
    assert.deepEqual(decodeFrame(encodeFrame(msg as never)), msg);
  });

  it('rejects text frames', () =>
    expectCode(() => decodeFrame(Buffer.from('{"type":"heartbeat"}'), false), 'EPROTOCOL', /text frames/));
  it('rejects an empty frame', () => expectCode(() => decodeFrame(Buffer.alloc(0)), 'EPROTOCOL', /empty/));
  it('rejects bytes that are not msgpack', () =>
    expectCode(() => decodeFrame(Buffer.from([0xc1, 0xc1, 0xc1])), 'EPROTOCOL', /msgpack/));
  it('rejects truncated msgpack', () => {
    const whole = encodeFrame({ v: PROTOCOL_VERSION, type: 'kill', attemptId: 'attempt_1', reason: 'x' });
    expectCode(() => decodeFrame(whole.subarray(0, whole.length - 3)), 'EPROTOCOL');
  });
  it('rejects a msgpack value that is not a map', () =>
    expectCode(() => decodeFrame(pack([1, 2, 3])), 'EPROTOCOL', /map/));
  it('rejects another protocol version with EVERSION', () =>
    expectCode(() => decodeFrame(pack({ v: 99, type: 'list-jobs', id: 1 })), 'EVERSION', /version 99/));
  it('rejects a frame without a version', () =>
    expectCode(() => decodeFrame(pack({ type: 'list-jobs', id: 1 })), 'EVERSION'));
  it('rejects unknown message types', () =>
    expectCode(
      () => decodeFrame(pack({ v: PROTOCOL_VERSION, type: 'format-disk', id: 1 })),
      'EPROTOCOL',
      /unknown message type/,
    ));
  it('rejects inherited property names as types', () =>
    expectCode(
      () => decodeFrame(pack({ v: PROTOCOL_VERSION, type: 'constructor' })),
      'EPROTOCOL',
      /unknown message type/,
    ));
  it('rejects a missing required field', () =>
    expectCode(
      () => decodeFrame(pack({ v: PROTOCOL_VERSION, type: 'kill', reason: 'x' })),
      'EPROTOCOL',
      /lacks field "attemptId"/,
    ));
  it('rejects a field of the wrong type', () =>
    expectCode(
      () => decodeFrame(pack({ v: PROTOCOL_VERSION, type: 'delete-blocks', blockIds: 'not-a-list' })),
      'EPROTOCOL',
      /"blockIds" must be array/,
    ));
  it('rejects a request without a numeric id', () =>
    expectCode(
      () => decodeFrame(pack({ v: PROTOCOL_VERSION, type: 'list-jobs', id: '1' })),
      'EPROTOCOL',
      /"id" must be number/,
    ));
  it('rejects frames over the size limit', () =>
    expectCode(() => decodeFrame(Buffer.alloc(MAX_FRAME_BYTES + 1, 0x90)), 'EPROTOCOL', /exceeds/));
});

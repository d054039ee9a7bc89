/**
 * Block access tokens, as HDFS's: the NameNode hands a client a token for one block and one
 * operation, with an expiry, and the datanodes check it before they serve, store, delete or relay
 * the block. A token is an HMAC-SHA256, under a key the NameNode shares with its datanodes (they get
 * it when they register), of the block id, the operation, the expiry and, for a relay, the targets
 * it may copy to: a datanode needs no call to the NameNode to check one, and nobody without the key
 * can make one. A token says nothing of who holds it (bearer tokens, as in HDFS): whoever may ask
 * the NameNode for a block may read it.
 *
 * The token travels in the `x-minimr-block-token` header as `<expiresAt>.<mac>`; the block id and
 * the operation come from the request itself, so a token for one block or one operation is worth
 * nothing for another. Expiry is wall-clock milliseconds: the machines' clocks must agree to within
 * a token's lifetime, as HDFS asks.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { MinimrError } from '../errors.js';
import type { DatanodeAddress } from './types.js';

export type BlockOperation = 'read' | 'write' | 'delete' | 'replicate';

export const BLOCK_TOKEN_HEADER = 'x-minimr-block-token';
/** One hour: a slow reader falling back to another replica late in a block still holds a valid token. */
export const DEFAULT_BLOCK_TOKEN_LIFETIME_MS = 60 * 60_000;
const KEY_BYTES = 32;
const TOKEN_FORMAT = /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/;

/** The secret the NameNode and its datanodes share; its text form travels in the worker's registration. */
export class BlockTokenKey {
  private constructor(private readonly secret: Buffer) {}

  static generate(): BlockTokenKey {
    return new BlockTokenKey(randomBytes(KEY_BYTES));
  }

  static parse(text: unknown): BlockTokenKey {
    const secret = typeof text === 'string' ? Buffer.from(text, 'base64url') : Buffer.alloc(0);
    if (secret.length !== KEY_BYTES)
      throw new MinimrError('EPROTOCOL', `a block token key is ${KEY_BYTES} bytes in base64url`);
    return new BlockTokenKey(secret);
  }

  toString(): string {
    return this.secret.toString('base64url');
  }

  /**
   * A token for `op` on `blockId` until `expiresAt`; `scope` binds what else the operation names (a relay's targets).
   */
  issue(blockId: string, op: BlockOperation, expiresAt: number, scope = ''): string {
    const expiry = Math.max(0, Math.floor(expiresAt));
    return `${expiry}.${this.mac(blockId, op, expiry, scope).toString('base64url')}`;
  }

  /** Throws ETOKEN, saying what is wrong, unless `token` allows `op` on `blockId` (and `scope`) at `now`. */
  verify(token: string | undefined, blockId: string, op: BlockOperation, now: number, scope = ''): void {
    const details = { blockId, op };
    if (token === undefined || token === '') {
      throw new MinimrError(
        'ETOKEN',
        `${op} of block ${blockId} needs a block access token (header ${BLOCK_TOKEN_HEADER}) issued by the NameNode`,
        details,
      );
    }
    const match = TOKEN_FORMAT.exec(token);
    if (!match) throw new MinimrError('ETOKEN', `malformed block access token for ${op} of block ${blockId}`, details);
    const expiry = Number(match[1]);
    const given = Buffer.from(match[2]!, 'base64url');
    const expected = this.mac(blockId, op, expiry, scope);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new MinimrError('ETOKEN', `block access token is not valid for ${op} of block ${blockId}`, details);
    }
    if (expiry <= now)
      throw new MinimrError(
        'ETOKEN',
        `block access token for ${op} of block ${blockId} expired ${now - expiry} ms ago; ask the NameNode again`,
        details,
      );
  }

  private mac(blockId: string, op: BlockOperation, expiresAt: number, scope: string): Buffer {
    return createHmac('sha256', this.secret)
      .update(`minimr-block-token-v1\n${blockId}\n${op}\n${expiresAt}\n${scope}`)
      .digest();
  }
}

/** What a relay token binds: the exact targets, so a copy can go only where the NameNode said. */
export function replicationScope(targets: readonly DatanodeAddress[]): string {
  return targets.map((t) => `${t.workerId}@${t.host}:${t.dataPort}/${t.rack}`).join(',');
}

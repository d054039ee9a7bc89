/**
 * Block access tokens, as HDFS's: the NameNode hands a client a token for one block and one
 * operation, with an expiry, and the datanodes check it before they serve, store, delete or relay
 * the block. A token is an HMAC-SHA256, under a key the NameNode shares with its datanodes (they get
 * it when they register), of the block id, the operation, the expiry and, for a relay, the targets
 * it may copy to: a datanode needs no call to the NameNode to check one, and nobody without the key
 * can make one. A token says nothing of who holds it (bearer tokens, as in HDFS): whoever may ask
 * the NameNode for a block may read it.
 *
 * The token travels in the `x-minimr-block-token` header as `<keyId>.<expiresAt>.<mac>` (the keys
 * are a ring rolled on a period: BlockTokenKey); the block id and the operation come from the
 * request itself, so a token for one block or one operation is worth nothing for another. Expiry
 * is wall-clock milliseconds: the machines' clocks must agree to within a token's lifetime, as HDFS asks.
 */
import { createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { MinimrError } from '../errors.js';
import type { DatanodeAddress } from './types.js';

export type BlockOperation = 'read' | 'write' | 'delete' | 'replicate';

export const BLOCK_TOKEN_HEADER = 'x-minimr-block-token';
/** One hour: a slow reader falling back to another replica late in a block still holds a valid token. */
export const DEFAULT_BLOCK_TOKEN_LIFETIME_MS = 60 * 60_000;
/** A new key every hour by default (HDFS: every 10 hours); the previous one is still accepted for as long again. */
export const DEFAULT_BLOCK_KEY_ROLL_MS = 60 * 60_000;
const KEY_BYTES = 32;
const MAX_KEY_ID = 2 ** 31 - 1;
const TOKEN_FORMAT = /^(\d{1,10})\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/;
const KEY_TEXT = /^(\d{1,10}):([A-Za-z0-9_-]{43})$/;

/** One key of the ring: an id that tokens name, and the secret their MACs are made with. */
class RingKey {
  constructor(
    readonly id: number,
    readonly secret: Buffer,
  ) {}

  mac(blockId: string, op: BlockOperation, expiresAt: number, scope: string): Buffer {
    return createHmac('sha256', this.secret)
      .update(`minimr-block-token-v2\n${this.id}\n${blockId}\n${op}\n${expiresAt}\n${scope}`)
      .digest();
  }
}

/**
 * The keys the NameNode and its datanodes share, as HDFS's block keys: the NameNode makes a new one
 * every period (`roll`) and signs with the newest; a token names the key that signed it, and a
 * datanode accepts the current and the previous key, so a token made just before a roll still
 * works while older keys (a captured one, say) stop working within two periods. The text form
 * (`toString`/`parse`: `id:key,id:key`, newest first) travels in the worker's registration and in
 * the JobTracker's `block-keys` message, only over the worker's authenticated (and, beyond
 * loopback, TLS) link.
 */
export class BlockTokenKey {
  /** Newest first; at most two. */
  private keys: RingKey[];

  private constructor(keys: RingKey[]) {
    this.keys = keys;
  }

  static generate(): BlockTokenKey {
    // A random first id: the keys of a JobTracker started again do not reuse the ids of the last run's.
    return new BlockTokenKey([new RingKey(randomInt(1, 2 ** 30), randomBytes(KEY_BYTES))]);
  }

  static parse(text: unknown): BlockTokenKey {
    const parts = typeof text === 'string' ? text.split(',') : [];
    const keys = parts.map((p) => KEY_TEXT.exec(p));
    if (keys.length === 0 || keys.length > 2 || keys.some((m) => m === null))
      throw new MinimrError('EPROTOCOL', `block token keys are one or two "id:key" (${KEY_BYTES} bytes in base64url)`);
    return new BlockTokenKey(keys.map((m) => new RingKey(Number(m![1]), Buffer.from(m![2]!, 'base64url'))));
  }

  toString(): string {
    return this.keys.map((k) => `${k.id}:${k.secret.toString('base64url')}`).join(',');
  }

  /** The id of the key new tokens are signed with. */
  get currentKeyId(): number {
    return this.keys[0]!.id;
  }

  /** Makes a new current key; the current one becomes the previous, still accepted; the one before is dropped. */
  roll(): void {
    const next = this.keys[0]!.id >= MAX_KEY_ID ? 1 : this.keys[0]!.id + 1;
    this.keys = [new RingKey(next, randomBytes(KEY_BYTES)), this.keys[0]!];
  }

  /** Takes the keys another ring holds (a datanode, from its NameNode). */
  replaceWith(other: BlockTokenKey): void {
    this.keys = [...other.keys];
  }

  /**
   * A token for `op` on `blockId` until `expiresAt`; `scope` binds what else the operation names (a relay's targets).
   */
  issue(blockId: string, op: BlockOperation, expiresAt: number, scope = ''): string {
    const key = this.keys[0]!;
    const expiry = Math.max(0, Math.floor(expiresAt));
    return `${key.id}.${expiry}.${key.mac(blockId, op, expiry, scope).toString('base64url')}`;
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
    const keyId = Number(match[1]);
    const expiry = Number(match[2]);
    const key = this.keys.find((k) => k.id === keyId);
    if (!key) {
      throw new MinimrError(
        'ETOKEN',
        `block access token for ${op} of block ${blockId} is signed with key ${keyId}, which this datanode ` +
          `no longer (or not yet) accepts (keys ${this.keys.map((k) => k.id).join(', ')}); ask the NameNode again`,
        { ...details, keyId },
      );
    }
    const given = Buffer.from(match[3]!, 'base64url');
    const expected = key.mac(blockId, op, expiry, scope);
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
}

/** What a relay token binds: the exact targets, so a copy can go only where the NameNode said. */
export function replicationScope(targets: readonly DatanodeAddress[]): string {
  return targets.map((t) => `${t.workerId}@${t.host}:${t.dataPort}/${t.rack}`).join(',');
}

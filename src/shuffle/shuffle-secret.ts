/**
 * The shuffle's proof of membership, as Hadoop's ShuffleHandler (SecureShuffleUtils): every job has
 * a random secret the JobTracker hands to its attempts only; a reducer sends, with each fetch, the
 * HMAC-SHA256 of the URL path under its job's secret, and the map's worker answers only when the
 * hash is right for that job. So a process outside the job, another job's reducer included, cannot
 * read a job's map output. The server answers with the HMAC of the reducer's hash, and the reducer
 * checks it, so a fetch is not fed by a server that does not know the secret either.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { MinimrError } from '../errors.js';

export const SHUFFLE_HASH_HEADER = 'x-minimr-shuffle-hash';
export const SHUFFLE_REPLY_HEADER = 'x-minimr-shuffle-reply';
const SECRET_BYTES = 32;
const HASH_FORMAT = /^[A-Za-z0-9_-]{43}$/;

/** A new job's secret, as text (base64url), to ship in its attempts' specs. */
export function newShuffleSecret(): string {
  return randomBytes(SECRET_BYTES).toString('base64url');
}

function hmac(secret: string, text: string): string {
  const key = Buffer.from(secret, 'base64url');
  if (key.length !== SECRET_BYTES)
    throw new MinimrError('EPROTOCOL', `a shuffle secret is ${SECRET_BYTES} bytes in base64url`);
  return createHmac('sha256', key).update(text).digest('base64url');
}

/** What a reducer sends for `urlPath` (the path it requests, exactly). */
export function shuffleRequestHash(secret: string, urlPath: string): string {
  return hmac(secret, `minimr-shuffle-v1\n${urlPath}`);
}

/** What the server answers to a request hash it accepted. */
export function shuffleReplyHash(secret: string, requestHash: string): string {
  return hmac(secret, `minimr-shuffle-reply-v1\n${requestHash}`);
}

export function sameHash(given: string | undefined, expected: string): boolean {
  if (given === undefined || !HASH_FORMAT.test(given)) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

/**
 * Joining a cluster is one string (issue 34): `minimr-join-1.<base64url of JSON>`, the JSON holding
 *
 *   url     where the JobTracker is (ws:// or wss://)
 *   ca      SHA-256 fingerprint (hex) of the cluster authority's certificate, to pin (absent: plain text)
 *   secret  the cluster secret (daemons: workers, the operator's tools), or
 *   user + key  a user's own credential
 *
 * `minimr join-token` prints one from the JobTracker's directory; `--join-token` / MINIMR_JOIN_TOKEN
 * take it. A token holds a secret: it is handled as the secret file is (never logged, never put on a
 * command line where other users can read it, e.g. MINIMR_JOIN_TOKEN or a 0600 config file instead).
 */
import { MinimrError } from '../../errors.js';

export const JOIN_TOKEN_PREFIX = 'minimr-join-1.';
/** Longest token accepted: a URL, a fingerprint and a secret are far below this. */
const MAX_TOKEN_CHARS = 16_384;
const FINGERPRINT = /^[0-9a-f]{64}$/;
const USER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$/;

export interface JoinToken {
  /** The JobTracker's URL, ws:// or wss://. */
  readonly url: string;
  /** Fingerprint (SHA-256, lower-case hex) of the cluster authority's certificate; absent for a plain-text cluster. */
  readonly ca?: string;
  /** The cluster secret (what a secret file holds, trimmed). */
  readonly secret?: string;
  /** A user's credential: the user and its key (base64url). */
  readonly user?: string;
  readonly key?: string;
}

function bad(why: string): MinimrError {
  return new MinimrError(
    'EBADCONF',
    `the join token is not valid: ${why} (a join token is one string \`${JOIN_TOKEN_PREFIX}…\`, as \`minimr join-token\` prints it)`,
  );
}

/** The token for `fields`, checked as `parseJoinToken` checks it. */
export function makeJoinToken(fields: JoinToken): string {
  const json: Record<string, string> = { url: fields.url };
  if (fields.ca !== undefined) json.ca = fields.ca;
  if (fields.secret !== undefined) json.secret = fields.secret;
  if (fields.user !== undefined) json.user = fields.user;
  if (fields.key !== undefined) json.key = fields.key;
  const token = `${JOIN_TOKEN_PREFIX}${Buffer.from(JSON.stringify(json), 'utf8').toString('base64url')}`;
  parseJoinToken(token);
  return token;
}

/** What a join token says; EBADCONF naming what is wrong with one that is malformed. */
export function parseJoinToken(token: string): JoinToken {
  const text = token.trim();
  if (text.length > MAX_TOKEN_CHARS) throw bad(`it is over ${MAX_TOKEN_CHARS} characters`);
  if (!text.startsWith(JOIN_TOKEN_PREFIX)) throw bad(`it does not start with ${JOIN_TOKEN_PREFIX}`);
  const body = text.slice(JOIN_TOKEN_PREFIX.length);
  if (!/^[A-Za-z0-9_-]+$/.test(body)) throw bad('what follows the prefix is not base64url');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw bad('what follows the prefix is not base64url of JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw bad('its JSON is not an object');
  const o = parsed as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!['url', 'ca', 'secret', 'user', 'key'].includes(k)) throw bad(`unknown field "${k.slice(0, 40)}"`);
  for (const k of ['url', 'ca', 'secret', 'user', 'key'])
    if (o[k] !== undefined && typeof o[k] !== 'string') throw bad(`"${k}" must be a string`);
  const { url, ca, secret, user, key } = o as Record<string, string | undefined>;
  if (url === undefined) throw bad('it has no "url"');
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    throw bad(`"url" ${JSON.stringify(url.slice(0, 200))} is not a URL`);
  }
  if (protocol !== 'ws:' && protocol !== 'wss:') throw bad(`"url" must be ws:// or wss://, got ${protocol}//`);
  if (ca !== undefined && !FINGERPRINT.test(ca))
    throw bad('"ca" must be a SHA-256 fingerprint: 64 lower-case hex digits');
  if (protocol === 'wss:' && ca === undefined) throw bad('a wss:// token must pin the cluster authority ("ca")');
  if (protocol === 'ws:' && ca !== undefined) throw bad('a ws:// (plain text) token cannot pin an authority');
  if (secret !== undefined && (user !== undefined || key !== undefined))
    throw bad('it holds either "secret" or "user" and "key", not both');
  if (secret === undefined && (user === undefined || key === undefined))
    throw bad('it holds neither "secret" nor "user" and "key"');
  if (secret !== undefined && secret.trim().length < 16) throw bad('its "secret" is shorter than 16 bytes');
  if (user !== undefined && !USER_NAME.test(user))
    throw bad(`"user" ${JSON.stringify(user.slice(0, 70))} is not a user name`);
  if (key !== undefined && !/^[A-Za-z0-9_-]{16,}$/.test(key)) throw bad('"key" must be base64url');
  return {
    url,
    ...(ca !== undefined ? { ca } : {}),
    ...(secret !== undefined ? { secret } : {}),
    ...(user !== undefined ? { user, key } : {}),
  };
}

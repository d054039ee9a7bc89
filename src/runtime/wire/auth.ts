/**
 * Authentication of protocol connections.
 *
 * A cluster has one secret, a file only its operators can read (mode 0600). Every connection to the
 * JobTracker proves knowledge of it before anything else is accepted, by challenge and response:
 *
 *   JobTracker -> peer   hello { nonce: Ns }                    (on connect; 32 random bytes, hex)
 *   peer -> JobTracker   auth  { user, nonce: Nc, proof: Pc }   Pc = HMAC-SHA256(secret, "client" Ns Nc user)
 *   JobTracker -> peer   reply { proof: Ps, admin }             Ps = HMAC-SHA256(secret, "server" Ns Nc user)
 *
 * The secret never crosses the wire; the JobTracker's fresh nonce makes a recorded answer useless on
 * another connection, and the peer's own nonce with the server's proof tells the peer it reached a
 * JobTracker that knows the secret (a worker will not take tasks from an impostor). Proofs are
 * compared in constant time. Any other message before a successful `auth` is answered with EAUTH
 * and the connection is closed; so is a wrong proof.
 *
 * Two kinds of key answer the challenge, and the `auth` frame says which (`via`):
 * - the cluster secret, the daemons' key (workers, and the operator's tools on the JobTracker's
 *   host): it proves the connection belongs to the cluster, may register a worker (the `daemon`
 *   role) and may name any user, as Hadoop's superuser may act for others;
 * - a user's credential (`minimr user add NAME` writes it: the user and a key of 32 random bytes
 *   the JobTracker keeps in its directory, user-store.ts): the same HMACs under that key, so the
 *   connection is that user and no other. Naming another user, a wrong key, or a user unknown or
 *   revoked is EAUTH naming the user.
 *
 * Where a client finds the secret: credentials passed in; `--secret-file` / MINIMR_SECRET_FILE;
 * a JobTracker in the same process (the local cluster, tests: one process is one trust domain); or,
 * for a cluster started on this machine by this OS user, the pointer that `minimr local` and
 * `minimr jobtracker` leave under ~/.minimr/clusters (it names the secret file, it does not hold
 * the secret, and only that user can read it).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { homedir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { MinimrError } from '../../errors.js';
import { isValidUserName, validateUserName } from '../../storage/index.js';

export interface Credentials {
  /** The user the connection acts for. */
  readonly user: string;
  /** The key that answers the challenge: the cluster secret, or the user's own key (`via: 'credential'`). */
  readonly secret: Buffer;
  /** Which key `secret` is; absent: the cluster secret. */
  readonly via?: AuthVia;
}

/** What a connection proved: the cluster secret (a daemon, may name any user) or one user's credential. */
export type AuthVia = 'secret' | 'credential';

/** A user's credential file: who it names and the key only that user and the JobTracker hold. */
export interface UserCredential {
  readonly user: string;
  /** 32 random bytes, base64url. */
  readonly key: string;
}

/** Length of a user's key, bytes. */
export const USER_KEY_BYTES = 32;

/** A new credential for `user`. */
export function newUserCredential(user: string): UserCredential {
  return { user: validateUserName(user), key: randomBytes(USER_KEY_BYTES).toString('base64url') };
}

/** The key of a credential, checked: 32 bytes in base64url. */
export function userKeyBytes(key: unknown, where: string): Buffer {
  const bytes = typeof key === 'string' && /^[A-Za-z0-9_-]{43}$/.test(key) ? Buffer.from(key, 'base64url') : undefined;
  if (bytes?.length !== USER_KEY_BYTES)
    throw new MinimrError('EBADCONF', `${where}: "key" must be ${USER_KEY_BYTES} bytes in base64url`);
  return bytes;
}

/** Reads a credential file (`minimr user add` wrote it): private to its owner, JSON `{user, key}`. */
export async function readCredentialFile(path: string): Promise<Credentials> {
  const text = await readPrivateFile(
    path,
    'the credential file',
    'give it with --credential-file or MINIMR_CREDENTIAL_FILE (`minimr user add NAME` makes one)',
  );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new MinimrError('EBADCONF', `the credential file ${path} is not JSON ({"user": ..., "key": ...})`);
  }
  const record = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  if (typeof record.user !== 'string') throw new MinimrError('EBADCONF', `the credential file ${path} names no "user"`);
  return {
    user: validateUserName(record.user, `"user" in ${path}`),
    secret: userKeyBytes(record.key, `the credential file ${path}`),
    via: 'credential',
  };
}

/** What a client needs to reach a JobTracker safely. */
export interface PeerSecurity {
  /**
   * Absent: a JobTracker in this process lends its secret; otherwise the connection is not authenticated (and refused).
   */
  readonly credentials?: Credentials;
  /** Certificate authority to trust for a wss:// JobTracker (PEM), besides the system's. */
  readonly tlsCa?: Buffer;
  /**
   * SHA-256 fingerprint (hex) of the cluster authority, from a join token: a wss:// JobTracker must
   * present it in its chain, and it is then the only authority trusted (tls.ts).
   */
  readonly tlsPin?: string;
}

/** Shortest secret accepted, bytes. */
export const MIN_SECRET_BYTES = 16;
/**
 * A connection that has not authenticated within this time is closed, and a client waits this long
 * for the challenge and the answer: as long as a worker waits for its registration, so that a
 * loaded JobTracker slows a handshake down without failing it.
 */
export const AUTH_TIMEOUT_MS = 30_000;

/** The OS user running this process, the default user of every connection. */
export function osUserName(): string {
  let name = '';
  try {
    name = userInfo().username;
  } catch {
    name = process.env.USER ?? process.env.USERNAME ?? '';
  }
  try {
    return validateUserName(name);
  } catch {
    return 'nobody';
  }
}

export function newNonce(): string {
  return randomBytes(32).toString('hex');
}

/**
 * HMAC-SHA256 over the key's kind, the role, both nonces and the user, NUL-separated so no two
 * inputs collide (a proof under a user's key is never one under the secret, whatever the keys).
 */
export function authProof(
  secret: Buffer,
  role: 'client' | 'server',
  serverNonce: string,
  clientNonce: string,
  user: string,
  via: AuthVia = 'secret',
): string {
  const kind = via === 'secret' ? 'minimr-auth-v1' : 'minimr-auth-user-v1';
  return createHmac('sha256', secret).update(`${kind}\0${role}\0${serverNonce}\0${clientNonce}\0${user}`).digest('hex');
}

/**
 * The password of the JobTracker's web pages and /metrics (HTTP Basic, any user name): derived from
 * the cluster secret, so whoever holds the secret can print it (`minimr web-password`) and a
 * browser or a Prometheus scraper never holds the secret itself.
 */
export function webPassword(secret: Buffer): string {
  return createHmac('sha256', secret).update('minimr-web-password-v1').digest('base64url').slice(0, 32);
}

/**
 * The user an HTTP request signs in as with Basic authentication and the web password (any user
 * name) or the key of the user's own credential (that user only), or
 * undefined when it does not (no header, another scheme, a wrong password, a bad user name).
 */
export function webUser(
  authorization: string | undefined,
  password: string,
  userKey: (user: string) => Buffer | undefined = () => undefined,
): string | undefined {
  const m = /^Basic ([A-Za-z0-9+/=]{1,1024})$/.exec(authorization ?? '');
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  const user = decoded.slice(0, colon);
  if (!isValidUserName(user)) return undefined;
  const given = decoded.slice(colon + 1);
  if (proofMatches(password, given)) return user;
  // A user with a credential may sign in as that user, and no other, with its key as the password.
  const key = userKey(user);
  return key !== undefined && proofMatches(key.toString('base64url'), given) ? user : undefined;
}

/** Constant-time comparison of a proof received with the one expected. */
export function proofMatches(expected: string, received: unknown): boolean {
  if (typeof received !== 'string' || received.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(expected, 'utf8'), Buffer.from(received, 'utf8'));
}

/**
 * The text of a file that must be private to its owner (a secret, a credential): EBADCONF, saying
 * what to do, when it cannot be read (`hint`: where to give it) or others may read it.
 */
async function readPrivateFile(path: string, what: string, hint: string): Promise<string> {
  let mode: number;
  let text: string;
  try {
    mode = (await stat(path)).mode;
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new MinimrError('EBADCONF', `cannot read ${what} ${path} (${code ?? (err as Error).message}); ${hint}`);
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    throw new MinimrError(
      'EBADCONF',
      `${what} ${path} is readable by other users (mode ${(mode & 0o777).toString(8)}); run \`chmod 600 ${path}\``,
    );
  }
  return text;
}

/** Reads a secret file: its content, trimmed, is the secret; it must be private to its owner. */
export async function readSecretFile(path: string): Promise<Buffer> {
  const text = await readPrivateFile(
    path,
    'the cluster secret file',
    'give it with --secret-file or MINIMR_SECRET_FILE',
  );
  const secret = Buffer.from(text.trim(), 'utf8');
  if (secret.length < MIN_SECRET_BYTES) {
    throw new MinimrError(
      'EBADCONF',
      `the cluster secret in ${path} is ${secret.length} bytes; it ` +
        `must be at least ${MIN_SECRET_BYTES} (e.g. \`openssl rand -hex ` +
        `32 > ${path}\`)`,
    );
  }
  return secret;
}

/** The secret at `path`, written there first (32 random bytes as hex, mode 0600) when the file does not exist. */
export async function loadOrCreateSecret(path: string): Promise<Buffer> {
  await mkdir(dirname(path), { recursive: true });
  try {
    // 'wx': never overwrite a secret another process wrote meanwhile.
    await writeFile(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new MinimrError('EBADCONF', `cannot write the cluster secret file ${path}: ${(err as Error).message}`);
    }
  }
  return readSecretFile(path);
}

// ---- a JobTracker's secret lent to clients in its own process ---------------------------------

const inProcessSecrets = new Map<string, Buffer>();

/** Lets clients in this process that connect to `url` use `secret` (a process is one trust domain). */
export function lendSecretInProcess(url: string, secret: Buffer): void {
  inProcessSecrets.set(url, secret);
}

export function withdrawSecretInProcess(url: string): void {
  inProcessSecrets.delete(url);
}

export function inProcessCredentials(url: string): Credentials | undefined {
  const secret = inProcessSecrets.get(url);
  return secret ? { user: osUserName(), secret } : undefined;
}

// ---- pointers to the secrets of clusters started on this machine ------------------------------

function clustersDir(): string {
  return join(homedir(), '.minimr', 'clusters');
}

function pointerPath(url: string): string {
  return join(clustersDir(), url.replace(/[^A-Za-z0-9.-]+/g, '_'));
}

/** Notes, for this OS user's clients, where the secret of the cluster at `url` is. */
export async function recordClusterSecret(url: string, secretFile: string): Promise<void> {
  await mkdir(clustersDir(), { recursive: true, mode: 0o700 });
  await writeFile(pointerPath(url), `${secretFile}\n`, { mode: 0o600 });
  await chmod(pointerPath(url), 0o600);
}

export async function forgetClusterSecret(url: string): Promise<void> {
  await rm(pointerPath(url), { force: true });
}

/**
 * The credentials a command-line client uses for `url`: a user's credential file (`credentialFile`,
 * else MINIMR_CREDENTIAL_FILE), else the secret from `secretFile`, else
 * MINIMR_SECRET_FILE, else the pointer a cluster started here left; none when there is none of them
 * (the JobTracker then refuses the connection with EAUTH, and says how to give the secret).
 */
export async function clientCredentials(
  url: string,
  options: { user?: string; secretFile?: string; credentialFile?: string } = {},
): Promise<Credentials | undefined> {
  const credentialFile = options.credentialFile ?? process.env.MINIMR_CREDENTIAL_FILE;
  if (credentialFile) {
    const credential = await readCredentialFile(credentialFile);
    const named = options.user ?? process.env.MINIMR_USER;
    if (named !== undefined && named !== credential.user)
      throw new MinimrError(
        'EAUTH',
        `the credential in ${credentialFile} is user ${credential.user}'s: it cannot act as ${named} ` +
          '(a user credential is its user and no other)',
        { user: named },
      );
    return credential;
  }
  const user = validateUserName(options.user ?? process.env.MINIMR_USER ?? osUserName(), '--user');
  const explicit = options.secretFile ?? process.env.MINIMR_SECRET_FILE;
  if (explicit) return { user, secret: await readSecretFile(explicit) };
  const lent = inProcessSecrets.get(url);
  if (lent) return { user, secret: lent };
  let pointed: string;
  try {
    pointed = (await readFile(pointerPath(url), 'utf8')).trim();
  } catch {
    return undefined;
  }
  try {
    return { user, secret: await readSecretFile(pointed) };
  } catch {
    return undefined; // a cluster that has gone away; the JobTracker, if any, will say EAUTH
  }
}

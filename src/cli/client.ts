import { readFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { MinimrError } from '../errors.js';
import {
  JobClient,
  authorityToTrust,
  clientCredentials,
  osUserName,
  parseJoinToken,
  type PeerSecurity,
} from '../runtime/index.js';
import { userKeyBytes, type Credentials, type JoinToken } from '../runtime/wire/index.js';
import { trustClusterAuthority, validateUserName } from '../storage/index.js';

/** The options every command that talks to a cluster takes. */
export interface ClusterArgs {
  jobtracker: string;
  'secret-file'?: string;
  'credential-file'?: string;
  user?: string;
  'tls-ca'?: string;
  'join-token'?: string;
}

/**
 * How this command proves the cluster secret, and which TLS certificates it trusts. A join token
 * (`--join-token`, MINIMR_JOIN_TOKEN) names the cluster (its url replaces `argv.jobtracker`), the
 * secret or a user's credential, and the authority to pin, which is checked against the JobTracker's chain here, before
 * anything else is sent. In a TLS cluster the same authority is trusted for the data ports.
 */
export async function peerSecurity(argv: ClusterArgs): Promise<PeerSecurity> {
  const tokenText = argv['join-token'] ?? process.env.MINIMR_JOIN_TOKEN;
  if (tokenText !== undefined && tokenText !== '') {
    const token = parseJoinToken(tokenText);
    argv.jobtracker = token.url;
    const tlsCa = await authorityToTrust(token.url, undefined, token.ca);
    if (tlsCa !== undefined) trustClusterAuthority(tlsCa);
    return {
      credentials: joinTokenCredentials(token, argv.user ?? process.env.MINIMR_USER),
      ...(tlsCa !== undefined ? { tlsCa } : {}),
      ...(token.ca !== undefined ? { tlsPin: token.ca } : {}),
    };
  }
  const credentials = await clientCredentials(argv.jobtracker, {
    user: argv.user,
    secretFile: argv['secret-file'],
    credentialFile: argv['credential-file'],
  });
  const caFile = argv['tls-ca'] ?? process.env.MINIMR_TLS_CA;
  const tlsCa = caFile ? await readCredentialFile(caFile, '--tls-ca') : undefined;
  // The data ports of a TLS cluster are certified by the cluster authority (the JobTracker's ca.pem):
  // with a certificate of its own on the JobTracker, --tls-ca is a file holding both authorities.
  if (tlsCa !== undefined && argv.jobtracker.startsWith('wss:')) trustClusterAuthority(tlsCa);
  return {
    ...(credentials ? { credentials } : {}),
    ...(tlsCa ? { tlsCa } : {}),
  };
}

async function readCredentialFile(path: string, option: string): Promise<Buffer> {
  try {
    return await readFile(resolvePath(path));
  } catch (err) {
    throw new MinimrError(
      'EBADCONF',
      `cannot read ${option} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

export async function withClient<T>(argv: ClusterArgs, fn: (c: JobClient) => Promise<T>): Promise<T> {
  const security = await peerSecurity(argv);
  const client = await JobClient.connect(argv.jobtracker, { security });
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

/** The JobTracker's TLS certificate and key, both or neither. */
export async function tlsIdentity(
  certFile: string | undefined,
  keyFile: string | undefined,
): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined)
    throw new MinimrError('EBADCONF', '--tls-cert and --tls-key go together: give both, or neither for plain ws://');
  return {
    cert: await readCredentialFile(certFile, '--tls-cert'),
    key: await readCredentialFile(keyFile, '--tls-key'),
  };
}

export const DEFAULT_JOBTRACKER = process.env.MINIMR_JOBTRACKER ?? 'ws://127.0.0.1:7700';

/**
 * Who a join token makes this command: the user its credential names (and no other), or, with the
 * cluster secret of a daemon token, the user named (default the OS user).
 */
function joinTokenCredentials(token: JoinToken, named: string | undefined): Credentials {
  if (token.user !== undefined && token.key !== undefined) {
    if (named !== undefined && named !== token.user)
      throw new MinimrError(
        'EAUTH',
        `the join token holds user ${token.user}'s credential: it cannot act as ${named}`,
        { user: named },
      );
    return { user: token.user, secret: userKeyBytes(token.key, 'the join token'), via: 'credential' };
  }
  if (token.secret === undefined)
    throw new MinimrError('EBADCONF', 'the join token holds neither the cluster secret nor a user credential');
  return {
    user: validateUserName(named ?? osUserName(), '--user'),
    secret: Buffer.from(token.secret.trim(), 'utf8'),
  };
}

import { readFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { MinimrError } from '../errors.js';
import { JobClient, clientCredentials, type PeerSecurity } from '../runtime/index.js';

/** The options every command that talks to a cluster takes. */
export interface ClusterArgs {
  jobtracker: string;
  'secret-file'?: string;
  'credential-file'?: string;
  user?: string;
  'tls-ca'?: string;
}

/** How this command proves the cluster secret, and which TLS certificates it trusts. */
export async function peerSecurity(argv: ClusterArgs): Promise<PeerSecurity> {
  const credentials = await clientCredentials(argv.jobtracker, {
    user: argv.user,
    secretFile: argv['secret-file'],
    credentialFile: argv['credential-file'],
  });
  const caFile = argv['tls-ca'] ?? process.env.MINIMR_TLS_CA;
  return {
    ...(credentials ? { credentials } : {}),
    ...(caFile ? { tlsCa: await readCredentialFile(caFile, '--tls-ca') } : {}),
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
  const client = await JobClient.connect(argv.jobtracker, { security: await peerSecurity(argv) });
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

/**
 * The store of a location outside the block store, made from the job's (or the command's) store
 * settings. Credentials are never settings: S3's come from the AWS SDK's standard chain of the process
 * that opens the store, WebHDFS's from `webhdfs.token` (a delegation token) or the user's own settings.
 */
import { MinimrError } from '../../errors.js';
import { createFileStore } from './file-store.js';
import type { Store, StoreConf, StoreLocation } from './types.js';
import { parseStoreUri } from './uri.js';

/** The settings of the stores: `s3.*` and `webhdfs.*` keys of a job's --conf. */
export function storeConfOf(conf: Readonly<Record<string, unknown>>): StoreConf {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(conf))
    if (/^(s3|webhdfs)\.[A-Za-z]+$/.test(key) && typeof value === 'string') out[key] = value;
  return out;
}

/**
 * The store holding `uri` and where in it, for any scheme but the block store's. S3's and WebHDFS's
 * modules load on first use: the AWS SDK alone would add its load time to every task process.
 */
export async function openExternalStore(
  uri: string,
  conf: StoreConf,
): Promise<{ store: Store; location: StoreLocation }> {
  const location = parseStoreUri(uri);
  switch (location.scheme) {
    case 'file':
      return { store: createFileStore(), location };
    case 's3':
      return { store: (await import('./s3-store.js')).createS3Store(conf), location };
    case 'webhdfs':
      return { store: (await import('./webhdfs-store.js')).createWebHdfsStore(location.authority, conf), location };
    default:
      throw new MinimrError('EBADPATH', `${uri} is in the block store: read it with the block store's client`, {
        path: uri,
      });
  }
}

/**
 * The stores outside the block store for a job's own code: `file://`, `s3://` and `webhdfs://`
 * (`hdfs://`), opened as the engine opens them to read a job's inputs and write its outputs
 * (src/storage/stores), as Hadoop's `FileSystem.get(uri, conf)` is open to a Mapper. `settings` are
 * the stores' `s3.*` and `webhdfs.*` keys; S3's credentials come from the task's environment by the
 * AWS SDK's standard chain, WebHDFS's from `webhdfs.token` (a delegation token).
 */
import { openExternalStore } from '../storage/stores/open-store.js';
import type { Store } from '../storage/stores/types.js';

export type { Store, StoreStatus, StoreWriter } from '../storage/stores/types.js';

export async function openStore(uri: string, settings: Readonly<Record<string, string>> = {}): Promise<Store> {
  return (await openExternalStore(uri, settings)).store;
}

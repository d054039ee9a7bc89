/** Stores for a job's inputs and outputs (types.ts states the design); the storage index re-exports these. */
export type {
  OutputCommitter,
  PartWriter,
  PendingPart,
  Store,
  StoreConf,
  StoreLocation,
  StoreScheme,
  StoreStatus,
  StoreWriter,
} from './types.js';
export { createS3Store, type S3StoreOptions } from './s3-store.js';
export { createWebHdfsStore, WebHdfsStore, type WebHdfsStoreOptions } from './webhdfs-store.js';
export { isExternalUri, normaliseLocation, parseStoreUri } from './uri.js';
export { createFileStore, FileStore } from './file-store.js';
export { openExternalStore, storeConfOf } from './open-store.js';
export { externalInputFiles, externalSplits, type ExternalSplit } from './input-splits.js';

/** The block store's public surface: other folders import from here only. */
export type {
  BlockAllocation,
  BlockInfo,
  ClientLocation,
  CreateOptions,
  DatanodeAddress,
  FileStatus,
  InputSplit,
  NamenodeApi,
  RecordBatch,
  RecordBatchReader,
  RecordChunk,
  RecordChunkReader,
  WrittenBlock,
} from './types.js';
export {
  Namenode,
  DEFAULT_BLOCK_SIZE,
  DEFAULT_REPLICATION,
  type NamenodeOptions,
  type ReplicationWork,
  type BlockReportOutcome,
  type DatanodeSpace,
  type ReportedReplica,
  type ScannedReplica,
  type BlockStoreUsage,
} from './namenode.js';
export {
  chooseTargets,
  FREE_SPACE_BUCKET,
  owedReplicaTarget,
  sortByDistance,
  type PlacementNode,
  type PlacementRequest,
} from './placement.js';
export {
  MAX_PATH_COMPONENT_BYTES,
  MAX_PATH_DEPTH,
  MAX_PATH_LENGTH,
  isInputName,
  isSameOrBelow,
  joinPath,
  validatePath,
} from './paths.js';
export {
  formatMode,
  isValidUserName,
  parseMode,
  validateUserName,
  type Access,
  type Caller,
  type Ownership,
} from './permissions.js';
export {
  CHECKSUM_CHUNK_SIZE,
  crc32Combine,
  ReadBufferPool,
  validateBlockId,
  type BlockStat,
  type BlockStore,
  type StoredReplica,
  type BlockWriteResult,
  type VerifiedPiece,
} from './block-store.js';
export { LocalDiskBlockStore, type LocalDiskBlockStoreOptions } from './local-disk-block-store.js';
export { createDataRequestHandler, replicateBlock, type DataAccess, type DataRequestHandler } from './data-server.js';
export {
  BlockTokenKey,
  BLOCK_TOKEN_HEADER,
  DEFAULT_BLOCK_TOKEN_LIFETIME_MS,
  DEFAULT_BLOCK_KEY_ROLL_MS,
  replicationScope,
  type BlockOperation,
} from './block-token.js';
export {
  putRemoteBlock,
  readRemoteBlock,
  deleteRemoteBlock,
  replicateRemoteBlock,
  trustClusterAuthority,
  clusterAuthority,
  newDataPortAgent,
  dataPortRequest,
  type DataRequestOptions,
  type RemoteReplicationResult,
} from './data-client.js';
export { checkLocalReplica, type BlockVerification } from './replica-check.js';
export {
  BlockScanner,
  DEFAULT_BLOCK_SCAN_BYTES_PER_SECOND,
  DEFAULT_BLOCK_SCAN_INTERVAL_MS,
  type BlockScannerOptions,
} from './block-scanner.js';
export { FsClient, type FsClientOptions, type FileWriter, type LocalReplicaReader } from './fs-client.js';
export { computeSplits } from './splits.js';
export {
  openLineReader,
  openFixedRecordReader,
  openLineChunkReader,
  openFixedRecordChunkReader,
  type BatchOptions,
  type ChunkReaderOptions,
  type RangeSource,
} from './record-readers.js';
export type { BlockScope } from './block-scope.js';
export { fsckReport, formatFsck, type FsckBlock, type FsckFile, type FsckReport } from './fsck.js';
export {
  sendRemoteException,
  sendWebHdfsJson,
  waitDrain,
  webHdfsPathOf,
  type RemoteException,
} from './webhdfs-http.js';
export {
  createWebHdfsDatanodeHandler,
  type WebHdfsDatanodeParts,
  type WebHdfsOpenPlan,
  type WebHdfsWriteStart,
} from './webhdfs-datanode.js';
// From the stores' own files, not stores/index.ts: that one exports createS3Store, whose AWS SDK would
// load with every process; openExternalStore imports it only when an s3:// URI is used.
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
} from './stores/types.js';
export { isExternalUri, normaliseLocation, parseStoreUri } from './stores/uri.js';
export { createFileStore } from './stores/file-store.js';
export { openExternalStore, storeConfOf } from './stores/open-store.js';
export { externalInputFiles, externalSplits, type ExternalSplit } from './stores/input-splits.js';
export { attemptsDirOf, stagingDirOf } from './stores/staging.js';

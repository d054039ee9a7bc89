/**
 * The wire: what crosses between the processes of a cluster, and the one machinery that carries
 * it. Each link is a table of operations (client-protocol.ts, worker-protocol.ts,
 * task-protocol.ts, handshake.ts), served through one dispatcher (dispatch.ts) and called through
 * stubs made from the same tables (stubs.ts). The web UI and other folders import the wire's
 * types from here, never the runtime's internals.
 */
export * from './types.js';
export { Type, Validator, type Static, type TSchema, type SchemaErrorCode } from './schema.js';
export {
  table,
  args,
  Done,
  type Operation,
  type Table,
  type Role,
  type OwnerRule,
  type OwnedResource,
  type HttpRoute,
  type ArgsOf,
  type ResultOf,
} from './operations.js';
export { CLIENT_PROTOCOL, type ClientProtocol, type UserListing, type UserOperations } from './client-protocol.js';
export {
  WORKER_TO_JOBTRACKER,
  JOBTRACKER_TO_WORKER,
  type WorkerToJobTracker,
  type JobTrackerToWorker,
  type WarmJob,
} from './worker-protocol.js';
export { TASK_TO_WORKER, WORKER_TO_TASK, type TaskToWorker, type WorkerToTask } from './task-protocol.js';
export { HANDSHAKE, type AuthResult } from './handshake.js';
export {
  WEBHDFS_PROTOCOL,
  WEBHDFS_METHODS,
  WEBHDFS_PREFIX,
  type WebHdfsAnswer,
  type WebHdfsMethod,
  type WebHdfsOperation,
  type WebHdfsProtocol,
} from './webhdfs.js';
export {
  NAMENODE_OPERATIONS,
  NAMENODE_OPS,
  namenodeOverLink,
  serveNamenodeOperation,
  type NamenodeOp,
  type NamenodeArgs,
  type NamenodeResult,
} from './namenode-operations.js';
export {
  Dispatcher,
  authorize,
  describeAllowed,
  type Caller,
  type CallContext,
  type Handlers,
  type Authority,
  type Ownership,
  type CallRecord,
  type CallObserver,
} from './dispatch.js';
export { stubOf, type Stub, type Link } from './stubs.js';
export { IpcLink, type IpcChannel } from './ipc-link.js';
export { WEBSOCKET_OPERATIONS, encodeFrame, decodeFrame } from './frame-codec.js';
export {
  PROTOCOL_VERSION,
  MAX_FRAME_BYTES,
  operationsOf,
  checkFrame,
  argumentsOf,
  type Frame,
  type OperationFrame,
  type ReplyFrame,
} from './frames.js';
export {
  RpcPeer,
  acceptPeer,
  connectPeer,
  CLOSE_AUTH_FAILED,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_UNSUPPORTED_DATA,
  type RawHandler,
  type Outgoing,
  type PeerKeys,
} from './rpc-peer.js';
export * from './auth.js';
export { validateSubmission, validateJobConf, parseConfPairs } from './submission.js';

export type { FrameOf, Message, TaskMessage, MapOutputsChanged, AttemptFinished } from './messages.js';
export type { UiSource, UiOverview, UiWorker, UiTask } from './web.js';
export * from './tls.js';
export * from './join-token.js';

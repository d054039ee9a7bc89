import type { NamenodeApi } from '../../storage/index.js';
import { NAMENODE_OPS, type NamenodeOp } from './protocol.js';
import type { RpcPeer } from './rpc-peer.js';

/** The JobTracker's NameNode, reached over a protocol connection (the current one: a client may reconnect). */
export function remoteNamenode(connection: () => RpcPeer): NamenodeApi {
  const api: Partial<Record<NamenodeOp, (...args: unknown[]) => Promise<unknown>>> = {};
  for (const op of NAMENODE_OPS) {
    // Optional arguments travel as null (msgpack has no undefined); the NameNode treats both alike.
    api[op] = (...args: unknown[]) => connection().request({ type: 'fs', op, args: args.map((a) => (a === undefined ? null : a)) });
  }
  return api as unknown as NamenodeApi;
}

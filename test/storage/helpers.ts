import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Logger } from '../../src/log.js';
import {
  BlockTokenKey,
  checkLocalReplica,
  createDataRequestHandler,
  LocalDiskBlockStore,
  Namenode,
  type NamenodeOptions,
  type BlockOperation,
  type DatanodeAddress,
} from '../../src/storage/index.js';

export const silentLogger: Logger = pino({ level: 'silent' });

export async function makeTempDir(prefix = 'minimr-storage-'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export async function collect(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of source) parts.push(chunk);
  return Buffer.concat(parts);
}

/** Deterministic pseudo-random bytes (xorshift), so failures reproduce. */
export function pseudoRandomBytes(length: number, seed = 12345): Buffer {
  const buf = Buffer.alloc(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    buf[i] = x & 0xff;
  }
  return buf;
}

export { seededRandom } from '../../src/util/index.js';

export interface TestDatanode {
  readonly address: DatanodeAddress;
  readonly store: LocalDiskBlockStore;
  readonly server: Server;
}

/** The block token key of datanodes started outside a test cluster (a cluster's datanodes share its NameNode's). */
export const testBlockKey = BlockTokenKey.generate();

/** A token the datanodes of `startDatanode` accept, valid for a minute. */
export function tokenFor(blockId: string, op: BlockOperation, key: BlockTokenKey = testBlockKey): string {
  return key.issue(blockId, op, Date.now() + 60_000);
}

export async function startDatanode(
  dir: string,
  workerId: string,
  rack: string,
  key: BlockTokenKey = testBlockKey,
): Promise<TestDatanode> {
  const store = new LocalDiskBlockStore({ dir: join(dir, workerId), workerId });
  await store.open();
  const handler = createDataRequestHandler(store, workerId, { blockKey: () => key });
  const server = createServer((req, res) => {
    if (!handler(req, res)) res.writeHead(404).end('not a data route');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { address: { workerId, host: '127.0.0.1', dataPort: port, rack }, store, server };
}

export async function stopDatanode(node: TestDatanode): Promise<void> {
  node.server.closeAllConnections();
  await new Promise<void>((resolve) => node.server.close(() => resolve()));
}

export interface TestCluster {
  readonly namenode: Namenode;
  readonly datanodes: TestDatanode[];
  readonly dir: string;
  close(): Promise<void>;
}

/** A NameNode in-process plus `racks.length` datanodes on real HTTP servers, registered with it. */
export async function startCluster(
  racks: readonly string[],
  namenodeOptions: Omit<NamenodeOptions, 'dbPath'> = {},
): Promise<TestCluster> {
  const { dir, cleanup } = await makeTempDir('minimr-cluster-');
  const namenode = new Namenode({ dbPath: join(dir, 'namenode'), logger: silentLogger, ...namenodeOptions });
  await namenode.open();
  const datanodes: TestDatanode[] = [];
  for (const [i, rack] of racks.entries()) {
    const node = await startDatanode(dir, `w${i + 1}`, rack, namenode.blockKey);
    namenode.registerDatanode(node.address, await node.store.list());
    datanodes.push(node);
  }
  return {
    namenode,
    datanodes,
    dir,
    async close() {
      await Promise.all(datanodes.map(stopDatanode));
      await namenode.close();
      await cleanup();
    },
  };
}

/**
 * What the runtime does on heartbeats: each datanode checks the replicas readers reported against
 * the NameNode's checksums, and only what it finds corrupt is removed.
 */
export async function verifyReportedReplicas(cluster: TestCluster): Promise<void> {
  for (const node of cluster.datanodes) {
    for (const block of cluster.namenode.takeVerifications(node.address.workerId)) {
      if ((await checkLocalReplica(node.store, block)) !== undefined)
        cluster.namenode.replicaCorrupt(node.address.workerId, block.blockId);
    }
  }
}

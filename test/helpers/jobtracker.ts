import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log.js';
import { JobClient, JobTracker, connectPeer, type RpcPeer } from '../../src/runtime/index.js';
import type { AttemptSpec, MapOutputsChanged, Message, RegisterResult } from '../../src/runtime/protocol.js';
import type { Policy } from '../../src/scheduler/index.js';

export interface LoneJobTracker {
  readonly jt: JobTracker;
  readonly client: JobClient;
  stop(): Promise<void>;
}

/** A JobTracker alone on port 0 in a fresh temp dir (no workers), with a client connected to it. */
export async function startJobTracker(policy: Policy, heartbeatMs: number): Promise<LoneJobTracker> {
  const dir = await mkdtemp(join(tmpdir(), 'minimr-jt-'));
  const jt = new JobTracker({ dataDir: dir, port: 0, policy, heartbeatMs, logger: createLogger('jt', 'silent') });
  await jt.start();
  const client = await JobClient.connect(jt.url);
  return {
    jt,
    client,
    async stop() {
      client.close();
      await jt.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A worker played by a test on a raw protocol connection: registered, recording what it is told. */
export interface FakeWorker {
  readonly id: string;
  readonly peer: RpcPeer;
  readonly launched: AttemptSpec[];
  readonly told: MapOutputsChanged[];
}

export async function registerFakeWorker(url: string, id: string, slots: { map: number; reduce: number }, dataPort = 1): Promise<FakeWorker> {
  const launched: AttemptSpec[] = [];
  const told: MapOutputsChanged[] = [];
  const peer = await connectPeer(url, (m: Message) => {
    if (m.type === 'launch') launched.push(m.attempt);
    if (m.type === 'map-outputs') told.push(m);
  });
  await peer.request<RegisterResult>({
    type: 'register',
    worker: { workerId: id, host: '127.0.0.1', dataPort, rack: '/r1', mapSlots: slots.map, reduceSlots: slots.reduce, memoryMb: 1 << 20, diskMBps: 0 },
    blockIds: [],
  });
  return { id, peer, launched, told };
}

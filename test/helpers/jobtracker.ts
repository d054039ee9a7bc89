import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log.js';
import { JobClient, JobTracker, connectPeer, type JobTrackerOptions, type RpcPeer } from '../../src/runtime/index.js';
import type {
  AttemptSpec,
  Credentials,
  HeldMapOutput,
  MapOutputsChanged,
  Message,
  RegisterResult,
} from '../../src/runtime/wire/index.js';
import type { Policy } from '../../src/scheduler/index.js';

export interface LoneJobTracker {
  readonly jt: JobTracker;
  readonly client: JobClient;
  stop(): Promise<void>;
}

/** A JobTracker alone on port 0 in a fresh temp dir (no workers), with a client connected to it. */
export async function startJobTracker(
  policy: Policy,
  heartbeatMs: number,
  options: Partial<Pick<JobTrackerOptions, 'taskExpiryMs' | 'datanodeExpiryMs' | 'fileOutputRoots'>> = {},
): Promise<LoneJobTracker> {
  const dir = await mkdtemp(join(tmpdir(), 'minimr-jt-'));
  const jt = new JobTracker({
    dataDir: dir,
    port: 0,
    policy,
    heartbeatMs,
    logger: createLogger('jt', 'silent'),
    ...options,
  });
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

/** A worker played by a test on a raw protocol connection: registered, recording what it is told, running nothing. */
export interface FakeWorker {
  readonly id: string;
  readonly peer: RpcPeer;
  /** Every attempt the JobTracker told this worker to launch, in order. */
  readonly launched: AttemptSpec[];
  readonly told: MapOutputsChanged[];
  /** The attempts the JobTracker told this worker to kill, in order. */
  readonly killed: string[];
  /** The JobTracker's answer to the registration. */
  readonly registered: RegisterResult;
  /** Sends a heartbeat and waits until the JobTracker has handled it (and whatever it launched). */
  heartbeat(jobId: string): Promise<void>;
  close(): void;
}

export async function registerFakeWorker(
  url: string,
  id: string,
  slots: { map: number; reduce: number; memoryMb?: number },
  dataPort = 1,
  mapOutputs?: HeldMapOutput[],
  credentials?: Credentials,
): Promise<FakeWorker> {
  const launched: AttemptSpec[] = [];
  const told: MapOutputsChanged[] = [];
  const killed: string[] = [];
  const peer = await connectPeer(
    url,
    (m: Message) => {
      if (m.type === 'launch') launched.push(m.attempt);
      if (m.type === 'map-outputs') told.push(m);
      if (m.type === 'kill') killed.push(m.attemptId);
    },
    undefined,
    10_000,
    credentials ? { credentials } : {},
  );
  const registered = await peer.request<RegisterResult>({
    type: 'register',
    worker: {
      workerId: id,
      host: '127.0.0.1',
      dataPort,
      rack: '/r1',
      mapSlots: slots.map,
      reduceSlots: slots.reduce,
      memoryMb: slots.memoryMb ?? 1 << 20,
      diskMBps: 0,
    },
    blockIds: [],
    ...(mapOutputs ? { mapOutputs } : {}),
  });
  return {
    id,
    peer,
    launched,
    told,
    killed,
    registered,
    async heartbeat(jobId) {
      peer.send({ type: 'heartbeat', workerId: id, attempts: [] });
      // Frames on one socket are handled in order: the reply to a request sent after the heartbeat
      // comes after any launch the heartbeat caused.
      await peer.request({ type: 'job-status', jobId });
    },
    close: () => peer.close(1000, 'done'),
  };
}

/** Worker "w1" with the given slots and memory. */
export function fakeWorker(
  jt: JobTracker,
  shape: { mapSlots: number; reduceSlots: number; memoryMb: number },
): Promise<FakeWorker> {
  return registerFakeWorker(jt.url, 'w1', { map: shape.mapSlots, reduce: shape.reduceSlots, memoryMb: shape.memoryMb });
}

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log.js';
import { JobClient, JobTracker, connectPeer } from '../../src/runtime/index.js';
import type { AttemptSpec, RegisterResult } from '../../src/runtime/protocol.js';
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

export interface FakeWorker {
  /** Every attempt the JobTracker told this worker to launch, in order. */
  readonly launched: AttemptSpec[];
  /** Sends a heartbeat and waits until the JobTracker has handled it (and whatever it launched). */
  heartbeat(jobId: string): Promise<void>;
  close(): void;
}

/**
 * A worker "w1" on a raw protocol connection to `jt`: it registers with the given slots and
 * memory, records what it is told to launch, runs nothing and reports no progress.
 */
export async function fakeWorker(jt: JobTracker, shape: { mapSlots: number; reduceSlots: number; memoryMb: number }): Promise<FakeWorker> {
  const launched: AttemptSpec[] = [];
  const peer = await connectPeer(jt.url, (m) => {
    if (m.type === 'launch') launched.push(m.attempt);
  });
  await peer.request<RegisterResult>({
    type: 'register',
    worker: { workerId: 'w1', host: '127.0.0.1', dataPort: 1, rack: '/r1', ...shape, diskMBps: 0 },
    blockIds: [],
  });
  return {
    launched,
    async heartbeat(jobId) {
      peer.send({ type: 'heartbeat', workerId: 'w1', attempts: [] });
      // Frames on one socket are handled in order: the reply to a request sent after the heartbeat
      // comes after any launch the heartbeat caused.
      await peer.request({ type: 'job-status', jobId });
    },
    close: () => peer.close(1000, 'done'),
  };
}

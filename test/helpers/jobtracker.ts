import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log.js';
import { JobClient, JobTracker } from '../../src/runtime/index.js';
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

/** Builders of the records a run leaves (src/metrics' RunRecord), for tests of what is computed from them. */
import type { AttemptRunRecord } from '../../src/metrics/index.js';

/** A succeeded node-local map attempt `a` of job j1 on w1, from 0 to 1000 ms, at its ideal 100 MB. */
export function mkRunAttempt(over: Partial<AttemptRunRecord>): AttemptRunRecord {
  return {
    id: 'a',
    jobId: 'j1',
    taskId: 't',
    kind: 'map',
    workerId: 'w1',
    startMs: 0,
    endMs: 1000,
    outcome: 'succeeded',
    locality: 'node',
    partition: 0,
    inputBytes: 0,
    bytesRead: 0,
    remoteNodeBytes: 0,
    remoteRackBytes: 0,
    memoryMb: 100,
    idealMemoryMb: 100,
    ...over,
  };
}

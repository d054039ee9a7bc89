import { performance } from 'node:perf_hooks';
import type { JobClient, JobStatus } from '../../src/runtime/index.js';

/** JobTracker-side duration of a finished job, from submission to its end. */
export function serverSeconds(s: JobStatus): number | null {
  return s.finishTime !== undefined ? (s.finishTime - s.submitTime) / 1000 : null;
}

/**
 * Waits for a submitted job, logging its progress every 10 s, and returns its status and the wall
 * time since `t0` (the moment the benchmark started submitting). Rejects with the job's error.
 */
export async function followJob(
  client: JobClient,
  jobId: string,
  label: string,
  t0: number,
  log: (message: string) => void,
): Promise<{ status: JobStatus; seconds: number }> {
  let lastLog = performance.now();
  const status = await client.waitForCompletion(jobId, {
    pollMs: 50,
    onProgress: (s) => {
      if (performance.now() - lastLog < 10_000) return;
      lastLog = performance.now();
      log(
        `${label}: ${s.state}, maps ${s.mapsCompleted}/${s.mapsTotal} (${(100 * s.mapProgress).toFixed(0)}%), ` +
          `reduces ${s.reducesCompleted}/${s.reducesTotal} (${(100 * s.reduceProgress).toFixed(0)}%)` +
          (s.failedAttempts ? `, ${s.failedAttempts} failed attempts` : ''),
      );
    },
  });
  const seconds = (performance.now() - t0) / 1000;
  log(
    `${label}: succeeded in ${seconds.toFixed(2)}s ` +
      `(server ${serverSeconds(status)?.toFixed(2)}s), ${status.mapsTotal} ` +
      `maps, ${status.reducesTotal} reduces`,
  );
  return { status, seconds };
}

/** A job's part files in part order. */
export async function partFiles(client: JobClient, dir: string): Promise<string[]> {
  const files = await client.fs.list(dir);
  return files
    .filter((f) => f.type === 'file' && /^part-/.test(f.path.split('/').pop() ?? ''))
    .map((f) => f.path)
    .sort();
}

/** A job's whole output as text. */
export async function readOutputText(client: JobClient, dir: string): Promise<string> {
  const chunks: Buffer[] = [];
  for (const p of await partFiles(client, dir)) for await (const c of client.fs.cat(p)) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

import { JobClient } from '../runtime/index.js';

/** Runs `fn` with a client of the JobTracker at `url`, closed afterwards. */
export async function withClient<T>(url: string, fn: (c: JobClient) => Promise<T>): Promise<T> {
  const client = await JobClient.connect(url);
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

export const DEFAULT_JOBTRACKER = process.env.MINIMR_JOBTRACKER ?? 'ws://127.0.0.1:7700';

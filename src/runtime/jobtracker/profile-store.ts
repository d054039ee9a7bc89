import type { Level } from 'level';
import { MinimrError } from '../../errors.js';
import { openExclusively } from '../../util/index.js';
import type { Logger } from '../../log.js';
import {
  addObservations,
  profileObservations,
  validateElasticityProfile,
  type AttemptObservation,
} from './job-profile.js';
import type { JobProfile } from '../wire/index.js';

const PROFILE_PREFIX = 'profile!';

/**
 * The JobTracker's profiles of recurring jobs (job-profile.ts), by job name, in `level` under its
 * directory, as the NameNode keeps its namespace: all of it in memory (a submission reads its
 * profile without waiting) and every change written through, one at a time, so the database and
 * memory never disagree and a JobTracker restarted on the same directory knows its jobs again.
 */
export class ProfileStore {
  private db!: Level<string, unknown>;
  private readonly profiles = new Map<string, JobProfile>();
  private opened = false;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly dbPath: string,
    private readonly log: Logger,
  ) {}

  async open(): Promise<void> {
    if (this.opened) return;
    const { Level } = await import('level');
    this.db = new Level<string, unknown>(this.dbPath, { valueEncoding: 'json' });
    await openExclusively(this.db, this.dbPath);
    for await (const [key, value] of this.db.iterator({ gte: PROFILE_PREFIX, lt: `${PROFILE_PREFIX}\uffff` })) {
      // Whatever is stored is checked when a job uses it (a bad profile runs the job regular), not here.
      this.profiles.set(key.slice(PROFILE_PREFIX.length), value as JobProfile);
    }
    this.opened = true;
  }

  async close(): Promise<void> {
    if (!this.opened) return;
    await this.queue.catch(() => undefined);
    await this.db.close();
    this.opened = false;
  }

  get(job: string): JobProfile | undefined {
    return this.profiles.get(job);
  }

  list(): JobProfile[] {
    return [...this.profiles.values()].sort((a, b) => (a.job < b.job ? -1 : a.job > b.job ? 1 : 0));
  }

  /** Adds what a successful run of `job` measured; a new profile belongs to `owner` (the job's). */
  record(job: string, observations: readonly AttemptObservation[], now: number, owner?: string): Promise<JobProfile> {
    return this.exclusive(() => addObservations(this.profiles.get(job), job, observations, now, 'run', owner));
  }

  /** Adds a `minimr profile` result (checked: EBADCONF if it is not one) to the profile of `job`. */
  async import(job: string, raw: unknown, now: number, owner?: string): Promise<JobProfile> {
    if (typeof job !== 'string' || job === '')
      throw new MinimrError('EBADCONF', 'a profile is imported under a job name (the `name` of its defineJob)');
    const observations = profileObservations(validateElasticityProfile(raw));
    return this.exclusive(() => addObservations(this.profiles.get(job), job, observations, now, 'import', owner));
  }

  /** Stores a profile as given, unchecked: for tests of what a damaged store does. */
  put(profile: JobProfile): Promise<JobProfile> {
    return this.exclusive(() => profile);
  }

  async remove(job: string): Promise<boolean> {
    return this.enqueue(async () => {
      if (!this.profiles.has(job)) return false;
      await this.db.del(PROFILE_PREFIX + job);
      this.profiles.delete(job);
      this.log.info({ job }, 'profile removed');
      return true;
    });
  }

  private exclusive(change: () => JobProfile): Promise<JobProfile> {
    return this.enqueue(async () => {
      const next = change();
      await this.db.put(PROFILE_PREFIX + next.job, next);
      this.profiles.set(next.job, next);
      return next;
    });
  }

  private enqueue<T>(step: () => Promise<T>): Promise<T> {
    if (!this.opened) return Promise.reject(new MinimrError('EINTERNAL', 'the profile store is not open'));
    const run = this.queue.then(step);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/**
 * MapOutputDirectory: where a reduce finds each map's output, as it learns it, and the fetcher's
 * queue of work. A reduce launched after the last map knows every location at once; one launched
 * early (reduce slow start) is told of each map output as its map finishes, and of outputs lost on
 * the way, so that it fetches while the map phase runs. The work is one segment per (partition,
 * map): the outputs known at the start partition by partition (consecutive fetches go to different
 * maps), each output learnt later with all its partitions, in the order they became known.
 *
 * A lost output (its worker died, or another reduce could not fetch it: the map runs again and its
 * new output is announced like the first, as Hadoop marks a map completion event obsolete):
 * - its segments not yet started wait for the map's next output;
 * - a try in flight runs on: if it succeeds its segment is kept (a map's records are its input's,
 *   whichever attempt wrote them, and a reduce's partitions are disjoint key sets), if it fails
 *   the segment waits for the map's next output instead of failing the reduce;
 * - segments already fetched are kept.
 * A segment whose fetch fails from an output nobody said was lost fails the reduce with EFETCH, as
 * before: the JobTracker re-runs that map and retries the reduce (src/books).
 */
import { MinimrError } from '../errors.js';
import { assertValidShuffleId } from './paths.js';
import type { MapOutputLocation } from './types.js';

/** One segment to fetch: `partition` of the output at `loc`. */
export interface FetchItem {
  readonly loc: MapOutputLocation;
  readonly partition: number;
}

export interface MapOutputDirectoryOptions {
  /**
   * Maps of the job: the reduce is done fetching once it has every partition of maps
   * 0..mapsTotal-1. Absent: `locations` are all the outputs there are (any map indices).
   */
  readonly mapsTotal?: number;
  /** The partitions this reduce reads from every map. */
  readonly partitions: readonly number[];
  /** Outputs known at launch (one per map index at most). */
  readonly locations?: readonly MapOutputLocation[];
}

export class MapOutputDirectory {
  /** How many map outputs the reduce needs. */
  readonly mapsTotal: number;
  /** The map indices expected when they are not 0..mapsTotal-1 (a directory given all its locations). */
  private readonly expected: ReadonlySet<number> | undefined;
  private readonly partitions: readonly number[];
  private readonly queue: FetchItem[] = [];
  private head = 0;
  /** The output each map has now; absent before its first announcement and while it is lost. */
  private readonly current = new Map<number, MapOutputLocation>();
  /** Maps announced at least once. */
  private readonly seen = new Set<number>();
  /** Segments of lost outputs, by map, waiting for the map's next output. */
  private readonly waiting = new Map<number, number[]>();
  private remaining: number;
  private wakers: Array<() => void> = [];
  /** Segments fetched while some map's output was not known yet: the work slow start overlapped with the maps. */
  earlySegments = 0;

  constructor(options: MapOutputDirectoryOptions) {
    const { partitions } = options;
    const initial = options.locations ?? [];
    const mapsTotal = options.mapsTotal ?? initial.length;
    if (!Number.isInteger(mapsTotal) || mapsTotal < 0)
      throw new MinimrError('EINTERNAL', `invalid map count ${mapsTotal}`, { mapsTotal });
    for (const p of partitions) {
      if (!Number.isInteger(p) || p < 0) throw new MinimrError('EINTERNAL', `invalid partition ${p}`, { partition: p });
    }
    this.mapsTotal = mapsTotal;
    this.expected = options.mapsTotal === undefined ? new Set(initial.map((l) => l.mapIndex)) : undefined;
    this.partitions = [...partitions];
    this.remaining = mapsTotal * partitions.length;
    for (const loc of initial) {
      this.checkLocation(loc);
      if (this.current.has(loc.mapIndex))
        throw new MinimrError('EINTERNAL', `two outputs of map ${loc.mapIndex} given`, { mapIndex: loc.mapIndex });
      this.current.set(loc.mapIndex, loc);
      this.seen.add(loc.mapIndex);
    }
    for (const partition of this.partitions) for (const loc of initial) this.queue.push({ loc, partition });
  }

  /** Every segment is fetched. */
  get finished(): boolean {
    return this.remaining === 0;
  }

  /** Some map's output is not known now (not announced yet, or lost and not announced again). */
  get waitingForMaps(): boolean {
    return this.current.size < this.mapsTotal;
  }

  /** A map's output is available (again, after a loss: a new attempt's). A repeated announcement changes nothing. */
  add(loc: MapOutputLocation): void {
    this.checkLocation(loc);
    if (this.current.get(loc.mapIndex)?.attemptId === loc.attemptId) return;
    this.current.set(loc.mapIndex, loc);
    const parts = this.seen.has(loc.mapIndex) ? (this.waiting.get(loc.mapIndex) ?? []) : this.partitions;
    this.seen.add(loc.mapIndex);
    this.waiting.delete(loc.mapIndex);
    for (const partition of parts) this.queue.push({ loc, partition });
    this.wake();
  }

  /** The output `attemptId` wrote for map `mapIndex` is gone; its unfetched segments wait for the next one. */
  lose(mapIndex: number, attemptId: string): void {
    const loc = this.current.get(mapIndex);
    if (loc?.attemptId !== attemptId) return;
    this.current.delete(mapIndex);
    const kept: FetchItem[] = [];
    for (let i = this.head; i < this.queue.length; i++) {
      const item = this.queue[i]!;
      if (item.loc === loc) this.wait(item);
      else kept.push(item);
    }
    this.queue.length = 0;
    this.head = 0;
    this.queue.push(...kept);
    this.wake();
  }

  /** Whether `loc` is no longer its map's output. */
  isLost(loc: MapOutputLocation): boolean {
    return this.current.get(loc.mapIndex)?.attemptId !== loc.attemptId;
  }

  /** The next segment to fetch, if one is known now. */
  take(): FetchItem | undefined {
    if (this.head === this.queue.length) return undefined;
    const item = this.queue[this.head++]!;
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    }
    return item;
  }

  /** A segment is fetched and verified. */
  fetched(_item: FetchItem): void {
    if (this.waitingForMaps) this.earlySegments++;
    this.remaining--;
    if (this.remaining === 0) this.wake();
  }

  /** A segment's output was lost while it was being fetched: fetch it from the map's next output. */
  refetch(item: FetchItem): void {
    const loc = this.current.get(item.loc.mapIndex);
    if (loc) this.queue.push({ loc, partition: item.partition });
    else this.wait(item);
    this.wake();
  }

  /** Resolves at the next change (an output announced or lost, the last segment fetched) or when `signal` aborts. */
  changed(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      this.wakers.push(done);
    });
  }

  private wait(item: FetchItem): void {
    const list = this.waiting.get(item.loc.mapIndex);
    if (list) list.push(item.partition);
    else this.waiting.set(item.loc.mapIndex, [item.partition]);
  }

  private wake(): void {
    const wakers = this.wakers;
    this.wakers = [];
    for (const w of wakers) w();
  }

  private checkLocation(loc: MapOutputLocation): void {
    const known = this.expected
      ? this.expected.has(loc.mapIndex)
      : Number.isInteger(loc.mapIndex) && loc.mapIndex >= 0 && loc.mapIndex < this.mapsTotal;
    if (!known) {
      throw new MinimrError('EINTERNAL', `map index ${loc.mapIndex} is not one of the job's ${this.mapsTotal} maps`, {
        mapIndex: loc.mapIndex,
        mapsTotal: this.mapsTotal,
      });
    }
    assertValidShuffleId(loc.attemptId, 'attemptId');
  }
}

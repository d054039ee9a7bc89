/**
 * Processor sharing of a host's cores among the attempts running on it: with n attempts doing work
 * on a host with c cores, each progresses at min(1, c / n) of its full speed. Pure arithmetic, no
 * events: the simulator tells it when runs start and stop and schedules the ends it hands back.
 *
 * Every run on a host progresses at the same rate, so one virtual clock per host suffices (the
 * classic processor-sharing trick): the host's virtual time advances at the current rate, a run
 * with w ms of work that starts at virtual time v is done at virtual time v + w, and the work it
 * has done by time t is V(t) - v. A change of the set of runs only changes the rate from then on.
 */
import { MinimrError } from '../errors.js';

/** A run's projected end, whenever it changes: its start, or a change of its host's rate. */
export interface ProjectedEnd<K> {
  readonly key: K;
  readonly endMs: number;
}

/** From `atMs` on (until the next breakpoint), the host's virtual clock runs at `rate`. */
interface Breakpoint {
  readonly atMs: number;
  readonly virtualMs: number;
  readonly rate: number;
}

interface HostState<K> {
  readonly cores: number;
  readonly runs: Set<K>;
  /** The last entry is the current rate; older ones answer work done at past heartbeats. */
  readonly history: Breakpoint[];
}

interface Run<K> {
  readonly host: HostState<K>;
  readonly startVirtualMs: number;
  readonly workMs: number;
}

/**
 * Float error in the virtual clock must not push an end a whole millisecond late: 3 runs of 10 s
 * on 2 cores end at 15000, not at 15001 because 10000 / (2 / 3) came out as 15000.000000000002.
 */
const END_TOLERANCE_MS = 1e-3;

export class ProcessorSharing<K> {
  private readonly hosts = new Map<string, HostState<K>>();
  private readonly runs = new Map<K, Run<K>>();

  /**
   * @param coresByHost the hosts that share their cores; runs on any other host are not modelled.
   * @param historyMs how far back from the latest change `workDoneMs` may be asked (the heartbeat
   *   interval: progress is what a worker reported at its last heartbeat); older rate history is dropped.
   */
  constructor(
    coresByHost: ReadonlyMap<string, number>,
    private readonly historyMs: number,
  ) {
    for (const [host, cores] of coresByHost) {
      this.hosts.set(host, { cores, runs: new Set(), history: [{ atMs: 0, virtualMs: 0, rate: 1 }] });
    }
  }

  /** Whether runs on this host share its cores. */
  shares(host: string): boolean {
    return this.hosts.has(host);
  }

  /**
   * A run begins its `workMs` of work on `host` at `nowMs`. Returns the new projected end of every
   * run whose end moved (this one's always; the others' only when the host's rate changed).
   */
  start(key: K, host: string, workMs: number, nowMs: number): ProjectedEnd<K>[] {
    const h = this.hosts.get(host);
    if (h === undefined)
      throw new MinimrError('EINTERNAL', `processor sharing: host "${host}" shares no cores`, { host });
    if (this.runs.has(key)) throw new MinimrError('EINTERNAL', 'processor sharing: a run started twice', { host });
    const before = this.advance(h, nowMs);
    h.runs.add(key);
    this.runs.set(key, { host: h, startVirtualMs: before.virtualMs, workMs });
    const after = this.rerate(h, before);
    return after.rate === before.rate ? [{ key, endMs: this.endOf(key, after) }] : this.endsOn(h, after);
  }

  /**
   * A run stops at `nowMs` (done, failed, killed or its worker lost). Returns the new projected ends
   * of the host's other runs when the rate changed. A key that is not running is ignored.
   */
  stop(key: K, nowMs: number): ProjectedEnd<K>[] {
    const run = this.runs.get(key);
    if (run === undefined) return [];
    const h = run.host;
    const before = this.advance(h, nowMs);
    h.runs.delete(key);
    this.runs.delete(key);
    const after = this.rerate(h, before);
    return after.rate === before.rate ? [] : this.endsOn(h, after);
  }

  isRunning(key: K): boolean {
    return this.runs.has(key);
  }

  /**
   * Work a running run had done by `atMs` (0 before its start, at most its work). `atMs` may lie
   * up to `historyMs` before the host's latest change, or any time after it.
   */
  workDoneMs(key: K, atMs: number): number {
    const run = this.runs.get(key);
    if (run === undefined) return 0;
    const done = virtualAt(run.host.history, atMs) - run.startVirtualMs;
    return Math.max(0, Math.min(run.workMs, done));
  }

  /** Brings the host's virtual clock to `nowMs` at the rate it has run at since its last change. */
  private advance(h: HostState<K>, nowMs: number): Breakpoint {
    const last = current(h);
    if (nowMs < last.atMs)
      throw new MinimrError('EINTERNAL', `processor sharing: time went back from ${last.atMs} to ${nowMs} ms`);
    return { atMs: nowMs, virtualMs: last.virtualMs + (nowMs - last.atMs) * last.rate, rate: last.rate };
  }

  /** Records the rate of the host's current set of runs from `now` (the advanced clock) on. */
  private rerate(h: HostState<K>, now: Breakpoint): Breakpoint {
    const nowMs = now.atMs;
    const point: Breakpoint = { ...now, rate: Math.min(1, h.cores / Math.max(1, h.runs.size)) };
    // Several changes at one time leave one breakpoint: only the last rate ever applies there.
    if (current(h).atMs === nowMs) h.history[h.history.length - 1] = point;
    else h.history.push(point);
    // Keep the breakpoint in force at nowMs - historyMs and everything after it.
    let keepFrom = 0;
    while (keepFrom + 1 < h.history.length && h.history[keepFrom + 1]!.atMs <= nowMs - this.historyMs) keepFrom++;
    if (keepFrom > 0) h.history.splice(0, keepFrom);
    return point;
  }

  private endsOn(h: HostState<K>, now: Breakpoint): ProjectedEnd<K>[] {
    return [...h.runs].map((key) => ({ key, endMs: this.endOf(key, now) }));
  }

  /**
   * Ends fall on whole milliseconds, as every other event time does, so runs that end together in
   * exact arithmetic end in one batch.
   */
  private endOf(key: K, now: Breakpoint): number {
    const run = this.runs.get(key)!;
    const leftMs = run.startVirtualMs + run.workMs - now.virtualMs;
    return Math.max(now.atMs, Math.ceil(now.atMs + leftMs / now.rate - END_TOLERANCE_MS));
  }
}

function current<K>(h: HostState<K>): Breakpoint {
  return h.history[h.history.length - 1]!;
}

/** The host's virtual time at `atMs`, from the breakpoint in force then (the earliest kept, if older). */
function virtualAt(history: readonly Breakpoint[], atMs: number): number {
  let i = history.length - 1;
  while (i > 0 && history[i]!.atMs > atMs) i--;
  const b = history[i]!;
  return b.virtualMs + (atMs - b.atMs) * b.rate;
}

/**
 * The inverse of processor sharing, for calibrating a model from a measured run: the work each of
 * a set of runs on one host did, given they shared `cores` cores, is the integral over its run of
 * min(1, cores / n(t)), n(t) the runs in progress at t. Measured task times on a crowded host are
 * stretched by sharing; this is what each task would take on a core of its own, were the model right.
 */
export function workUnderSharingMs(
  runs: ReadonlyArray<{ readonly startMs: number; readonly endMs: number }>,
  cores: number,
): number[] {
  if (!(cores > 0))
    throw new MinimrError('EBADCONF', `cores must be a positive number, got ${cores}`, { field: 'cores' });
  const work = runs.map(() => 0);
  const times = [...new Set(runs.flatMap((r) => [r.startMs, r.endMs]))].sort((a, b) => a - b);
  for (let k = 0; k + 1 < times.length; k++) {
    const from = times[k]!;
    const to = times[k + 1]!;
    const inProgress: number[] = [];
    runs.forEach((r, i) => {
      if (r.startMs <= from && r.endMs >= to) inProgress.push(i);
    });
    const rate = Math.min(1, cores / Math.max(1, inProgress.length));
    for (const i of inProgress) work[i]! += (to - from) * rate;
  }
  return work;
}

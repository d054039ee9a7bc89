/**
 * Hadoop Rumen job traces: the JSON that Rumen's TraceBuilder writes from job history and that
 * Hadoop's SLS replays with --input-rumen.
 */
import { MinimrError } from '../errors.js';
import { isJsonObject, parseJsonStream } from './json-stream.js';
import type { ClusterShape, JobSpec, TaskSpec, Workload, WorkerShape } from './types.js';

export interface RumenOptions {
  /**
   * Memory every task asks for; default 1024 MB. SLS gives Rumen tasks its default container
   * (yarn.sls.container.memory.mb, 1024) whatever the trace says, and so does minimr.
   */
  readonly defaultMemoryMb?: number;
  readonly name?: string;
}

interface ErrorPlace {
  readonly jobId?: string;
  readonly taskId?: string;
  readonly attemptId?: string;
}

function bad(message: string, place: ErrorPlace, field: string): never {
  const details: Record<string, string> = { field };
  if (place.jobId !== undefined) details.jobId = place.jobId;
  if (place.taskId !== undefined) details.taskId = place.taskId;
  if (place.attemptId !== undefined) details.attemptId = place.attemptId;
  throw new MinimrError('EBADCONF', message, details);
}

interface HostPlace {
  readonly rack: string;
  readonly host: string;
}

const ATTEMPT_RESULTS = ['SUCCESS', 'FAILED', 'KILLED'] as const;
type AttemptResult = (typeof ATTEMPT_RESULTS)[number];

interface AttemptRead {
  readonly id: string;
  readonly result: AttemptResult;
  readonly hostName: unknown;
  readonly where?: HostPlace;
  readonly startTime?: number;
  readonly finishTime?: number;
}

/** Reads one Rumen trace: its jobs, in submit order, and every host it names with its rack. */
class RumenReader {
  /** Host -> rack, for every host an attempt ran on or a task preferred. */
  readonly hosts = new Map<string, string>();
  private readonly memoryMb: number;

  constructor(
    private readonly source: string,
    options: RumenOptions,
  ) {
    this.memoryMb = options.defaultMemoryMb ?? 1024;
    if (!(this.memoryMb > 0))
      bad(`${source}: defaultMemoryMb must be positive, got ${this.memoryMb}`, {}, 'defaultMemoryMb');
  }

  /** A time in ms: Rumen writes -1 for a time it does not know, which a replay cannot use either. */
  private time(
    obj: Record<string, unknown>,
    field: string,
    at: string,
    place: ErrorPlace,
    required: boolean,
  ): number | undefined {
    const v = obj[field];
    if (v === undefined && !required) return undefined;
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) return v;
    return bad(`${at}: field "${field}" must be a time in ms >= 0, got ${JSON.stringify(v)}`, place, field);
  }

  private notBefore(
    later: number | undefined,
    laterField: string,
    earlier: number | undefined,
    earlierField: string,
    at: string,
    place: ErrorPlace,
  ): void {
    if (later !== undefined && earlier !== undefined && later < earlier)
      bad(`${at}: field "${laterField}" (${later}) is before "${earlierField}" (${earlier})`, place, laterField);
  }

  /** Byte counts: Rumen writes -1 when the counter is missing; minimr reads that as 0. */
  private bytes(obj: Record<string, unknown>, field: string, at: string, place: ErrorPlace): number | undefined {
    const v = obj[field];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v))
      return bad(`${at}: field "${field}" must be a number of bytes, got ${JSON.stringify(v)}`, place, field);
    return v >= 0 ? v : undefined;
  }

  private noteHost(where: HostPlace, at: string, place: ErrorPlace, field: string): void {
    const rack = this.hosts.get(where.host);
    if (rack !== undefined && rack !== where.rack)
      bad(
        `${at}: field "${field}" puts host "${where.host}" in rack ` +
          `"${where.rack}", but elsewhere the trace has it in rack ` +
          `"${rack}"`,
        place,
        field,
      );
    this.hosts.set(where.host, where.rack);
  }

  private attempt(value: unknown, n: number, at: string, place: ErrorPlace): AttemptRead {
    if (!isJsonObject(value)) return bad(`${at}: attempt ${n + 1} is not an object`, place, 'attempts');
    const id =
      typeof value.attemptID === 'string' && value.attemptID !== ''
        ? value.attemptID
        : bad(
            `${at}: attempt ${n + 1}: field "attemptID" must be a non-empty ` +
              `string, got ${JSON.stringify(value.attemptID)}`,
            place,
            'attemptID',
          );
    const here = `${at}: attempt "${id}"`;
    const attemptPlace = { ...place, attemptId: id };
    const result = value.result;
    if (!(ATTEMPT_RESULTS as readonly unknown[]).includes(result))
      bad(
        `${here}: field "result" must ` +
          `be ${ATTEMPT_RESULTS.map((r) => `"${r}"`).join(', ')}, ` +
          `got ${JSON.stringify(result)}`,
        attemptPlace,
        'result',
      );
    const hostName = value.hostName;
    let where: HostPlace | undefined;
    if (hostName !== undefined) {
      const m = typeof hostName === 'string' ? /^\/([^/]+)\/([^/]+)$/.exec(hostName) : null;
      if (!m)
        bad(
          `${here}: field "hostName" must look like "/rack/host", got ${JSON.stringify(hostName)}`,
          attemptPlace,
          'hostName',
        );
      where = { rack: m[1]!, host: m[2]! };
      this.noteHost(where, here, attemptPlace, 'hostName');
    }
    const startTime = this.time(value, 'startTime', here, attemptPlace, false);
    const finishTime = this.time(value, 'finishTime', here, attemptPlace, false);
    this.notBefore(finishTime, 'finishTime', startTime, 'startTime', here, attemptPlace);
    return {
      id,
      result: result as AttemptResult,
      hostName,
      ...(where ? { where } : {}),
      ...(startTime !== undefined ? { startTime } : {}),
      ...(finishTime !== undefined ? { finishTime } : {}),
    };
  }

  private preferredHosts(value: unknown, at: string, place: ErrorPlace): string[] {
    if (value === undefined) return [];
    if (!Array.isArray(value))
      return bad(
        `${at}: field "preferredLocations" must be an array of {"layers": [rack, host]}`,
        place,
        'preferredLocations',
      );
    const hosts: string[] = [];
    value.forEach((loc, i) => {
      const layers = isJsonObject(loc) ? loc.layers : undefined;
      if (
        !Array.isArray(layers) ||
        layers.length !== 2 ||
        layers.some((l) => typeof l !== 'string' || l === '' || l.includes('/'))
      ) {
        bad(
          `${at}: preferredLocations entry ${i + 1} must be {"layers": [rack, host]}, got ${JSON.stringify(loc)}`,
          place,
          'preferredLocations',
        );
      }
      const where = { rack: layers[0] as string, host: layers[1] as string };
      this.noteHost(where, at, place, 'preferredLocations');
      if (!hosts.includes(where.host)) hosts.push(where.host);
    });
    return hosts;
  }

  private task(value: unknown, k: number, kind: 'MAP' | 'REDUCE', where: string, jobId: string): TaskSpec {
    const list = kind === 'MAP' ? 'mapTasks' : 'reduceTasks';
    if (!isJsonObject(value)) return bad(`${where}: ${list} entry ${k + 1} is not a task object`, { jobId }, list);
    const t = value;
    const taskId =
      typeof t.taskID === 'string' && t.taskID !== ''
        ? t.taskID
        : bad(
            `${where}: ${list} entry ${k + 1}: field "taskID" must be a ` +
              `non-empty string, got ${JSON.stringify(t.taskID)}`,
            { jobId },
            'taskID',
          );
    const at = `${where}: task "${taskId}"`;
    const place = { jobId, taskId };
    if (t.taskType !== undefined && t.taskType !== 'MAP' && t.taskType !== 'REDUCE')
      bad(`${at}: field "taskType" must be "MAP" or "REDUCE", got ${JSON.stringify(t.taskType)}`, place, 'taskType');
    if (t.taskType !== undefined && t.taskType !== kind)
      bad(`${at}: field "taskType" is "${String(t.taskType)}" but the task is listed in "${list}"`, place, 'taskType');
    const start = this.time(t, 'startTime', at, place, false);
    const finish = this.time(t, 'finishTime', at, place, false);
    this.notBefore(finish, 'finishTime', start, 'startTime', at, place);
    const inputBytes = this.bytes(t, 'inputBytes', at, place);
    const outputBytes = this.bytes(t, 'outputBytes', at, place);
    const preferred = this.preferredHosts(t.preferredLocations, at, place);
    if (!Array.isArray(t.attempts) || t.attempts.length === 0)
      return bad(
        `${at}: field "attempts" must be a non-empty array (a task without attempts has nothing to replay)`,
        place,
        'attempts',
      );
    const attempts = t.attempts.map((a, n) => this.attempt(a, n, at, place));
    // SLS replays one attempt per task, the last; that is the successful one when the task
    // succeeded, and taking SUCCESS first keeps a killed speculative twin listed after it out.
    const replayed = attempts.find((a) => a.result === 'SUCCESS') ?? attempts[attempts.length - 1]!;
    const here = `${at}: attempt "${replayed.id}"`;
    const replayedPlace = { ...place, attemptId: replayed.id };
    if (!replayed.where)
      return bad(
        `${here}: field "hostName" must look like "/rack/host", got ${JSON.stringify(replayed.hostName)}`,
        replayedPlace,
        'hostName',
      );
    const attemptStart =
      replayed.startTime ??
      bad(`${here}: field "startTime" must be a time in ms >= 0, got undefined`, replayedPlace, 'startTime');
    const attemptFinish =
      replayed.finishTime ??
      bad(`${here}: field "finishTime" must be a time in ms >= 0, got undefined`, replayedPlace, 'finishTime');
    const workMs = attemptFinish - attemptStart;
    if (kind === 'REDUCE') return { workMs, memoryMb: this.memoryMb, inputBytes: 0 };
    return {
      workMs,
      memoryMb: this.memoryMb,
      inputBytes: inputBytes ?? 0,
      ...(outputBytes !== undefined ? { outputBytes } : {}),
      // The split's block lived on the preferred hosts; without them, where the map ran is the
      // best guess (SLS asks for that host).
      replicas: preferred.length > 0 ? preferred : [replayed.where.host],
    };
  }

  jobs(values: readonly unknown[]): { jobs: JobSpec[]; baselineMs: number } {
    if (values.length === 0) bad(`${this.source}: no jobs`, {}, 'jobID');
    const seen = new Set<string>();
    const parsed = values.map((value, i) => {
      if (!isJsonObject(value)) return bad(`${this.source}: entry ${i + 1} is not a job object`, {}, 'jobID');
      const j = value;
      const jobId =
        typeof j.jobID === 'string' && j.jobID !== ''
          ? j.jobID
          : bad(
              `${this.source}: job ${i + 1}: field "jobID" must be a non-empty string, got ${JSON.stringify(j.jobID)}`,
              {},
              'jobID',
            );
      const where = `${this.source}: job "${jobId}"`;
      const place = { jobId };
      if (seen.has(jobId)) bad(`${where}: "jobID" is used twice`, place, 'jobID');
      seen.add(jobId);
      const submit = this.time(j, 'submitTime', where, place, true)!;
      const launch = this.time(j, 'launchTime', where, place, false);
      const finish = this.time(j, 'finishTime', where, place, false);
      this.notBefore(launch, 'launchTime', submit, 'submitTime', where, place);
      this.notBefore(
        finish,
        'finishTime',
        launch ?? submit,
        launch !== undefined ? 'launchTime' : 'submitTime',
        where,
        place,
      );
      if (j.queue !== undefined && (typeof j.queue !== 'string' || j.queue === ''))
        bad(`${where}: field "queue" must be a non-empty string, got ${JSON.stringify(j.queue)}`, place, 'queue');
      if (j.jobName !== undefined && typeof j.jobName !== 'string')
        bad(`${where}: field "jobName" must be a string, got ${JSON.stringify(j.jobName)}`, place, 'jobName');
      for (const list of ['mapTasks', 'reduceTasks'])
        if (!Array.isArray(j[list])) bad(`${where}: field "${list}" must be an array`, place, list);
      const maps = (j.mapTasks as unknown[]).map((t, k) => this.task(t, k, 'MAP', where, jobId));
      const reduces = (j.reduceTasks as unknown[]).map((t, k) => this.task(t, k, 'REDUCE', where, jobId));
      return { jobId, submit, queue: j.queue as string | undefined, maps, reduces };
    });
    // Rumen times are epoch ms; SLS replays them from the first submission on, and so does minimr.
    const baselineMs = parsed.reduce((min, p) => Math.min(min, p.submit), Number.POSITIVE_INFINITY);
    const order = parsed.map((p, i) => ({ p, i })).sort((a, b) => a.p.submit - b.p.submit || a.i - b.i);
    const jobs = order.map(
      ({ p }, i): JobSpec => ({
        id: `job_${String(i + 1).padStart(4, '0')}`,
        name: p.jobId,
        app: 'rumen',
        submitMs: p.submit - baselineMs,
        ...(p.queue !== undefined ? { pool: p.queue } : {}),
        maps: p.maps,
        reduces: p.reduces,
      }),
    );
    return { jobs, baselineMs };
  }
}

/** The workload of already split Rumen job objects (readWorkloadFile has split them to detect the format). */
export function rumenWorkloadFromValues(values: readonly unknown[], options: RumenOptions = {}): Workload {
  const { jobs, baselineMs } = new RumenReader(options.name ?? 'Rumen trace', options).jobs(values);
  return { name: options.name ?? 'rumen', jobs, meta: { generator: 'rumen', jobs: jobs.length, baselineMs } };
}

/**
 * Reads a Rumen job trace (TraceBuilder's output: job objects one after another, or an array).
 * Per job `jobID`, `submitTime`, optional `launchTime`, `finishTime`, `queue`, `jobName`, and
 * `mapTasks` / `reduceTasks` whose tasks have `taskID`, `taskType` ("MAP" | "REDUCE"), optional
 * `startTime`, `finishTime`, `inputBytes`, `outputBytes`, `preferredLocations` ([{"layers":
 * [rack, host]}]), and `attempts` with `attemptID`, `result` ("SUCCESS" | "FAILED" | "KILLED"),
 * `hostName` ("/rack/host"), `startTime`, `finishTime`.
 *
 * As SLS replays it: one attempt per task, the successful one (else the last); the task's work is
 * that attempt's finishTime - startTime, and failed or killed attempts are not replayed (the
 * simulator's own failure model adds failures). Submit times count from the first submission
 * (`meta.baselineMs` keeps the epoch time). A map's replicas are its preferredLocations' hosts,
 * else the host its attempt ran on; its inputBytes and outputBytes are the task's (-1, Rumen's
 * "unknown", reads as 0 and absent). Every task asks for `defaultMemoryMb`. Jobs are renumbered
 * job_0001.. in submit order; the trace's jobID becomes the name. Any bad field is EBADCONF naming
 * the job, task and field, and nothing is returned.
 */
export function parseRumenTrace(text: string, options: RumenOptions = {}): Workload {
  return rumenWorkloadFromValues(parseJsonStream(text, options.name ?? 'Rumen trace', 'job object'), options);
}

/**
 * One worker per host a Rumen trace names (where attempts ran, which tasks preferred), in its rack,
 * with the given slots and memory, in name order: SLS's cluster when it is given no node file.
 */
export function clusterFromRumenTrace(
  text: string,
  shape: Omit<WorkerShape, 'id' | 'rack'>,
  name = 'rumen-hosts',
): ClusterShape {
  const reader = new RumenReader(name, {});
  reader.jobs(parseJsonStream(text, name, 'job object'));
  const workers = [...reader.hosts.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .map(([id, rack]) => ({ ...shape, id, rack }));
  if (workers.length === 0) bad(`${name}: the trace names no hosts`, {}, 'hostName');
  return { name, workers };
}

/**
 * Workloads from files: Hadoop Scheduler Load Simulator (SLS) JSON traces, Hadoop Rumen job traces
 * (rumen.ts), and minimr's own workload JSON (a lossless round trip of the Workload type).
 */
import { MinimrError } from '../errors.js';
import { DEFAULT_MIN_MEMORY_FRACTION, parsePools, type TaskKind } from '../scheduler/index.js';
import { describeJsonValues, isJsonObject, parseJsonStream } from './json-stream.js';
import { rumenWorkloadFromValues } from './rumen.js';
import { parseSkewSpec } from './skew-spec.js';
import type { ClusterShape, JobSpec, MrClusterSpec, PenaltyModel, TaskSpec, Workload, WorkerShape } from './types.js';

function bad(message: string, details: Record<string, string | number> = {}): never {
  throw new MinimrError('EBADCONF', message, details);
}

/** Hadoop SLS MRAMSimulator's container priorities (PRIORITY_MAP, PRIORITY_REDUCE). */
const SLS_MAP_PRIORITY = 20;
const SLS_REDUCE_PRIORITY = 10;

export interface SlsOptions {
  /** Memory of a container that names none (SLS traces usually do not); default 1024 MB. */
  readonly defaultMemoryMb?: number;
  readonly name?: string;
  /** The penalty model of DSS task groups that name none (DSS's command line, `--penalty step:3`). */
  readonly defaultPenalty?: DssPenalty;
}

/** A DSS penalty model by name and initial bump ("c.penalty" and "c.ib" of a task group). */
export interface DssPenalty {
  readonly model: string;
  readonly ib: number;
}

/**
 * `--penalty MODEL[:FACTOR]` as DSS's command line gives it (`PEEK STEP 3` is `step:3`): MODEL one
 * of DSS's penalty models (null, step, power1, power2, squareroot or sqrt), FACTOR its initial bump
 * (default 1). EBADCONF naming what is known otherwise.
 */
export function parseDssPenalty(text: string): DssPenalty {
  const [name = '', factor] = text.split(':');
  const model = name.toUpperCase() === 'SQRT' ? 'SQUAREROOT' : name.toUpperCase();
  if (!(model in DSS_PENALTIES))
    bad(
      `--penalty ${JSON.stringify(text)}: unknown penalty model; known: ` +
        `${Object.keys(DSS_PENALTIES)
          .map((k) => k.toLowerCase())
          .join(', ')}, sqrt (SAWTOOTH is not modelled)`,
    );
  const ib = factor === undefined ? 1 : Number(factor);
  if (!(Number.isFinite(ib) && ib >= 1))
    bad(`--penalty ${JSON.stringify(text)}: the factor (the initial bump) must be a number >= 1`);
  return { model, ib };
}

/**
 * Reads an SLS trace: per job `am.type`, `job.id`, `job.start.ms`, `job.end.ms`, `job.queue.name`,
 * `job.tasks` with `container.host` ("/rack/node"), `container.start.ms`, `container.end.ms`,
 * `container.priority` and/or `container.type` ("map" | "reduce"). Priority 20 is a map and 10 a
 * reduce: Hadoop's SLS MRAMSimulator asks for map containers at PRIORITY_MAP = 20 and reduce
 * containers at PRIORITY_REDUCE = 10, and its sample traces are written that way.
 * A task's work is its recorded duration; a map's input replica is the node it ran on. Jobs are
 * renumbered job_0001.. in start order (the trace's id becomes the name). SLS's optional leading
 * {"num.nodes", "num.racks"} object sizes SLS's own cluster and is skipped. Any bad field is
 * EBADCONF naming the job, the task (its position in "job.tasks", SLS tasks have no id) and the
 * field, and nothing is returned.
 */
export function parseSlsTrace(text: string, options: SlsOptions = {}): Workload {
  return slsWorkloadFromValues(parseJsonStream(text, options.name ?? 'SLS trace', 'job object'), options);
}

function isClusterSizeHeader(value: unknown): boolean {
  return (
    isJsonObject(value) &&
    Object.keys(value).length > 0 &&
    Object.keys(value).every((k) => k === 'num.nodes' || k === 'num.racks')
  );
}

/** The workload of already split SLS job objects (readWorkloadFile has split them to detect the format). */
function slsWorkloadFromValues(values: readonly unknown[], options: SlsOptions = {}): Workload {
  const source = options.name ?? 'SLS trace';
  const defaultMemoryMb = options.defaultMemoryMb ?? 1024;
  const raw = values.filter((v) => !isClusterSizeHeader(v));
  if (raw.length === 0) bad(`${source}: no jobs`);
  const seen = new Set<string>();
  const parsed = raw.map((value, i) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return bad(`${source}: entry ${i + 1} is not a job object`);
    const j = value as Record<string, unknown>;
    const id =
      typeof j['job.id'] === 'string' && j['job.id'] !== ''
        ? (j['job.id'] as string)
        : bad(`${source}: job ${i + 1}: field "job.id" must be a non-empty string`, { field: 'job.id' });
    const where = `${source}: job "${id}"`;
    if (seen.has(id)) bad(`${where}: "job.id" is used twice`, { jobId: id, field: 'job.id' });
    seen.add(id);
    // DSS's generator also writes "generic" (its jobs are task groups either way).
    const amType = j['am.type'];
    if (amType !== undefined && amType !== 'mapreduce' && amType !== 'generic')
      bad(`${where}: field "am.type" is "${String(amType)}"; only "mapreduce" and "generic" traces are supported`, {
        jobId: id,
        field: 'am.type',
      });
    const num = (field: string, obj: Record<string, unknown>, at: string, taskId?: string): number => {
      const v = obj[field];
      return typeof v === 'number' && Number.isFinite(v) && v >= 0
        ? v
        : bad(`${at}: field "${field}" must be a number >= 0, got ${JSON.stringify(v)}`, {
            jobId: id,
            ...(taskId ? { taskId } : {}),
            field,
          });
    };
    // The paper's simulator (DSS) starts a job after another one with "job.start.ms": "job_X".
    const afterJob = typeof j['job.start.ms'] === 'string' ? (j['job.start.ms'] as string) : undefined;
    const start = afterJob !== undefined ? 0 : num('job.start.ms', j, where);
    // "job.end.ms" is not read: a job's end is what the simulation says. (DSS's generator writes
    // 200000 for every job, before many jobs' starts; SLS replays its own containers' times.)
    const queue = j['job.queue.name'];
    if (queue !== undefined && (typeof queue !== 'string' || queue === ''))
      bad(`${where}: field "job.queue.name" must be a non-empty string`, { jobId: id, field: 'job.queue.name' });
    if (!Array.isArray(j['job.tasks']))
      bad(`${where}: field "job.tasks" must be an array`, { jobId: id, field: 'job.tasks' });
    const maps: TaskSpec[] = [];
    const reduces: TaskSpec[] = [];
    const dssGroups: Array<{ kind: TaskKind; priority: number; specs: TaskSpec[] }> = [];
    (j['job.tasks'] as unknown[]).forEach((t, k) => {
      const taskId = `task ${k + 1}`;
      const at = `${where}: ${taskId}`;
      if (typeof t !== 'object' || t === null) bad(`${at} is not an object`, { jobId: id, taskId, field: 'job.tasks' });
      const task = t as Record<string, unknown>;
      if (Object.keys(task).some((key) => key.startsWith('c.'))) {
        dssGroups.push(dssTaskGroup(task, at, { jobId: id, taskId }, options.defaultPenalty));
        return;
      }
      const host = task['container.host'];
      if (typeof host !== 'string' || !/^\/[^/]+\/[^/]+$/.test(host))
        bad(`${at}: field "container.host" must look like "/rack/node", got ${JSON.stringify(host)}`, {
          jobId: id,
          taskId,
          field: 'container.host',
        });
      const s = num('container.start.ms', task, at, taskId);
      const e = num('container.end.ms', task, at, taskId);
      if (e < s)
        bad(`${at}: field "container.end.ms" (${e}) is before "container.start.ms" (${s})`, {
          jobId: id,
          taskId,
          field: 'container.end.ms',
        });
      const priority = task['container.priority'];
      const type = task['container.type'];
      if (priority !== undefined && priority !== SLS_MAP_PRIORITY && priority !== SLS_REDUCE_PRIORITY) {
        bad(
          `${at}: field "container.priority" must be ${SLS_MAP_PRIORITY} ` +
            `(map) or ${SLS_REDUCE_PRIORITY} (reduce), ` +
            `got ${JSON.stringify(priority)}`,
          { jobId: id, taskId, field: 'container.priority' },
        );
      }
      if (type !== undefined && type !== 'map' && type !== 'reduce')
        bad(`${at}: field "container.type" must be "map" or "reduce", got ${JSON.stringify(type)}`, {
          jobId: id,
          taskId,
          field: 'container.type',
        });
      if (priority === undefined && type === undefined)
        bad(`${at}: needs "container.priority" or "container.type"`, { jobId: id, taskId, field: 'container.type' });
      const kind = type ?? (priority === SLS_MAP_PRIORITY ? 'map' : 'reduce');
      if (priority !== undefined && type !== undefined && (priority === SLS_MAP_PRIORITY) !== (type === 'map')) {
        bad(`${at}: "container.priority" ${String(priority)} contradicts "container.type" "${String(type)}"`, {
          jobId: id,
          taskId,
          field: 'container.priority',
        });
      }
      const memory = task['container.memory'] ?? defaultMemoryMb;
      if (typeof memory !== 'number' || !(memory > 0))
        bad(
          `${at}: field "container.memory" must be a positive number of ` +
            `MB, got ${JSON.stringify(task['container.memory'])}`,
          { jobId: id, taskId, field: 'container.memory' },
        );
      const node = (host as string).split('/')[2]!;
      const spec: TaskSpec = {
        workMs: e - s,
        memoryMb: memory as number,
        ...(kind === 'map' ? { replicas: [node], inputBytes: 0 } : { inputBytes: 0 }),
      };
      (kind === 'map' ? maps : reduces).push(spec);
    });
    // DSS's task groups run in priority order (lowest first), maps before reduces as minimr runs them.
    for (const g of [...dssGroups].sort((a, b) => a.priority - b.priority))
      (g.kind === 'map' ? maps : reduces).push(...g.specs);
    return { id, start, afterJob, queue: queue as string | undefined, maps, reduces, dss: dssGroups.length > 0 };
  });
  const order = startOrder(parsed, source);
  const newId = new Map(order.map((p, i) => [p.id, `job_${String(i + 1).padStart(4, '0')}`]));
  const jobs: JobSpec[] = order.map((p) => ({
    id: newId.get(p.id)!,
    name: p.id,
    app: p.dss ? 'dss' : 'sls',
    submitMs: p.start,
    ...(p.afterJob !== undefined ? { after: newId.get(p.afterJob)! } : {}),
    ...(p.queue !== undefined ? { pool: p.queue } : {}),
    maps: p.maps,
    reduces: p.reduces,
  }));
  const dss = parsed.some((p) => p.dss);
  return {
    name: options.name ?? (dss ? 'dss' : 'sls'),
    jobs,
    meta: { generator: dss ? 'dss' : 'sls', jobs: jobs.length },
  };
}

/**
 * Jobs in start order, each job that starts after another ("job.start.ms": "job_X") right after
 * the jobs before it in that order; the id must name a job of the trace, and no cycle.
 */
function startOrder<P extends { readonly id: string; readonly start: number; readonly afterJob?: string }>(
  parsed: readonly P[],
  source: string,
): P[] {
  const ids = new Set(parsed.map((p) => p.id));
  for (const p of parsed) {
    if (p.afterJob !== undefined && !ids.has(p.afterJob))
      bad(
        `${source}: job "${p.id}": field "job.start.ms" is "${p.afterJob}", which is neither a number of ms nor ` +
          'the id of a job in the trace (DSS: the job starts when that one ends)',
        { jobId: p.id, field: 'job.start.ms' },
      );
  }
  const order = parsed
    .map((p, i) => ({ p, i }))
    .filter(({ p }) => p.afterJob === undefined)
    .sort((a, b) => a.p.start - b.p.start || a.i - b.i)
    .map(({ p }) => p);
  const placed = new Set(order.map((p) => p.id));
  let waiting = parsed.filter((p) => p.afterJob !== undefined);
  while (waiting.length > 0) {
    const ready = waiting.filter((p) => placed.has(p.afterJob!));
    if (ready.length === 0)
      bad(`${source}: jobs ${waiting.map((p) => `"${p.id}"`).join(', ')} start after each other in a cycle`, {
        field: 'job.start.ms',
      });
    for (const p of ready) {
      order.push(p);
      placed.add(p.id);
    }
    waiting = waiting.filter((p) => !placed.has(p.id));
  }
  return order;
}

/** DSS's penalty models as minimr's; SAWTOOTH and SPARKWC are not modelled here. */
const DSS_PENALTIES: Readonly<Record<string, (ib: number) => PenaltyModel>> = {
  NULL: () => ({ kind: 'none' }),
  STEP: (ib) => ({ kind: 'step', factor: ib, minFraction: DEFAULT_MIN_MEMORY_FRACTION }),
  POWER1: () => ({ kind: 'power', exponent: 1, minFraction: DEFAULT_MIN_MEMORY_FRACTION }),
  POWER2: () => ({ kind: 'power', exponent: 2, minFraction: DEFAULT_MIN_MEMORY_FRACTION }),
  SQUAREROOT: () => ({ kind: 'power', exponent: 0.5, minFraction: DEFAULT_MIN_MEMORY_FRACTION }),
};

/**
 * A task group of the paper's simulator (DSS): "c.nr" alike containers of "c.type" MAP or REDUCE,
 * each running "c.dur" ms with "c.mem" MB and "c.cores" (1) core, at "c.prio", with the penalty
 * model "c.penalty" of initial bump "c.ib" (NULL, STEP, POWER1, POWER2, SQUAREROOT); no penalty
 * model: insensitive to memory. Any bad field is EBADCONF naming it.
 */
function dssTaskGroup(
  task: Record<string, unknown>,
  at: string,
  ids: { jobId: string; taskId: string },
  defaultPenalty?: DssPenalty,
): { kind: TaskKind; priority: number; specs: TaskSpec[] } {
  const fail = (field: string, want: string): never =>
    bad(`${at}: field "${field}" must be ${want}, got ${JSON.stringify(task[field])}`, { ...ids, field });
  const value = (field: string, ok: (v: number) => boolean, want: string): number => {
    const v = task[field];
    return typeof v === 'number' && Number.isFinite(v) && ok(v) ? v : fail(field, want);
  };
  const count = value('c.nr', (v) => Number.isInteger(v) && v >= 1, 'a whole number >= 1');
  const workMs = value('c.dur', (v) => v >= 0, 'a number of ms >= 0');
  const memoryMb = value('c.mem', (v) => v > 0, 'a positive number of MB');
  const priority = value('c.prio', Number.isInteger, 'an integer');
  if (task['c.cores'] !== undefined) value('c.cores', (v) => v === 1, '1 (a task runs in one slot)');
  const type = typeof task['c.type'] === 'string' ? (task['c.type'] as string).toUpperCase() : '';
  if (type !== 'MAP' && type !== 'REDUCE') fail('c.type', '"MAP" or "REDUCE" (application masters are not modelled)');
  let penalty: PenaltyModel | undefined;
  if (task['c.penalty'] !== undefined) {
    const name = typeof task['c.penalty'] === 'string' ? (task['c.penalty'] as string).toUpperCase() : '';
    const model =
      DSS_PENALTIES[name] ??
      bad(
        `${at}: unknown penalty ` +
          `model ${JSON.stringify(task['c.penalty'])} in field ` +
          `"c.penalty"; known: ${Object.keys(DSS_PENALTIES).join(', ')}`,
        { ...ids, field: 'c.penalty' },
      );
    penalty = model(value('c.ib', (v) => v >= 1, "the penalty's initial bump, a number >= 1"));
  } else if (task['c.ib'] !== undefined) {
    fail('c.penalty', 'a penalty model when "c.ib" is given');
  } else if (defaultPenalty !== undefined) {
    penalty = DSS_PENALTIES[defaultPenalty.model]!(defaultPenalty.ib);
  }
  const spec: TaskSpec = { workMs, memoryMb, inputBytes: 0, replicas: [], ...(penalty ? { penalty } : {}) };
  return { kind: type === 'MAP' ? 'map' : 'reduce', priority, specs: Array.from({ length: count }, () => spec) };
}

/** One worker per host named in an SLS trace, with the given slots and memory, in name order. */
export function clusterFromSlsTrace(
  text: string,
  shape: Omit<WorkerShape, 'id' | 'rack'>,
  name = 'sls-hosts',
): ClusterShape {
  const hosts = new Map<string, string>();
  for (const m of text.matchAll(/"container\.host"\s*:\s*"\/([^/"]+)\/([^/"]+)"/g)) hosts.set(m[2]!, m[1]!);
  const workers = [...hosts.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .map(([id, rack]) => ({ ...shape, id, rack }));
  if (workers.length === 0) bad(`${name}: the trace names no hosts`);
  return { name, workers };
}

// ---- minimr workload JSON ----------------------------------------------------------------------

const FORMAT = 'minimr-workload';

/** The workload as JSON text (`readWorkloadJson` reads it back to an equal Workload). */
export function workloadToJson(workload: Workload): string {
  return `${JSON.stringify({ format: FORMAT, version: 1, ...workload })}\n`;
}

function penaltyFrom(v: unknown, at: string): PenaltyModel | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'object' || v === null) return bad(`${at}: "penalty" must be an object`);
  const p = v as Record<string, unknown>;
  const positive = (field: string): number =>
    typeof p[field] === 'number' && (p[field] as number) >= 0
      ? (p[field] as number)
      : bad(`${at}: penalty "${field}" must be a number >= 0`);
  switch (p.kind) {
    case 'none':
      return { kind: 'none' };
    case 'step':
      return { kind: 'step', factor: positive('factor'), minFraction: positive('minFraction') };
    case 'power':
      return { kind: 'power', exponent: positive('exponent'), minFraction: positive('minFraction') };
    case 'spill':
      if (p.rule !== 'map' && p.rule !== 'reduce') bad(`${at}: penalty "rule" must be "map" or "reduce"`);
      return {
        kind: 'spill',
        rule: p.rule as 'map' | 'reduce',
        bufferBytes: positive('bufferBytes'),
        overheadMb: positive('overheadMb'),
        minFraction: positive('minFraction'),
        ...(p.diskMBps !== undefined ? { diskMBps: positive('diskMBps') } : {}),
      };
    default:
      return bad(
        `${at}: unknown penalty model ${JSON.stringify(p.kind)}: "kind" must be "none", "step", "power" or "spill"`,
        { field: 'penalty' },
      );
  }
}

function taskFrom(v: unknown, at: string): TaskSpec {
  if (typeof v !== 'object' || v === null) return bad(`${at} is not an object`);
  const t = v as Record<string, unknown>;
  const n = (field: string, required: boolean): number | undefined => {
    const x = t[field];
    if (x === undefined && !required) return undefined;
    return typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : bad(`${at}: "${field}" must be a number >= 0`);
  };
  const memoryMb = n('memoryMb', true)!;
  if (!(memoryMb > 0)) bad(`${at}: "memoryMb" must be positive`);
  const replicas = t.replicas;
  if (replicas !== undefined && (!Array.isArray(replicas) || replicas.some((r) => typeof r !== 'string')))
    bad(`${at}: "replicas" must be an array of worker ids`);
  const penalty = penaltyFrom(t.penalty, at);
  const inputBytes = n('inputBytes', false);
  const outputBytes = n('outputBytes', false);
  return {
    workMs: n('workMs', true)!,
    memoryMb,
    ...(penalty ? { penalty } : {}),
    ...(inputBytes !== undefined ? { inputBytes } : {}),
    ...(outputBytes !== undefined ? { outputBytes } : {}),
    ...(replicas !== undefined ? { replicas: replicas as string[] } : {}),
  };
}

/** Reads minimr's workload JSON, checking every field; errors name the job and the field. */
export function readWorkloadJson(text: string, source = 'workload'): Workload {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return bad(`${source}: not valid JSON: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return bad(`${source}: expected a workload object`);
  const w = v as Record<string, unknown>;
  if (w.format !== FORMAT) bad(`${source}: "format" must be "${FORMAT}"`);
  if (!Array.isArray(w.jobs)) bad(`${source}: "jobs" must be an array`);
  const ids = new Set<string>();
  const jobs = (w.jobs as unknown[]).map((raw, i): JobSpec => {
    if (typeof raw !== 'object' || raw === null) return bad(`${source}: job ${i + 1} is not an object`);
    const j = raw as Record<string, unknown>;
    const id =
      typeof j.id === 'string' && j.id !== '' ? j.id : bad(`${source}: job ${i + 1}: "id" must be a non-empty string`);
    const at = `${source}: job "${id}"`;
    if (ids.has(id)) bad(`${at} is listed twice`, { jobId: id });
    ids.add(id);
    const str = (field: string, required: boolean): string | undefined => {
      const x = j[field];
      if (x === undefined && !required) return undefined;
      return typeof x === 'string' ? x : bad(`${at}: "${field}" must be a string`, { jobId: id, field });
    };
    if (!Array.isArray(j.maps) || !Array.isArray(j.reduces))
      bad(`${at}: "maps" and "reduces" must be arrays`, { jobId: id });
    if (typeof j.submitMs !== 'number' || !(j.submitMs >= 0))
      bad(`${at}: "submitMs" must be a number >= 0`, { jobId: id, field: 'submitMs' });
    if (j.weight !== undefined && (typeof j.weight !== 'number' || !(j.weight > 0)))
      bad(`${at}: "weight" must be a positive number`, { jobId: id, field: 'weight' });
    if (j.referenceMs !== undefined && (typeof j.referenceMs !== 'number' || !(j.referenceMs > 0)))
      bad(`${at}: "referenceMs" must be a positive number`, { jobId: id, field: 'referenceMs' });
    if (j.speculative !== undefined && typeof j.speculative !== 'boolean')
      bad(`${at}: "speculative" must be true or false`, { jobId: id, field: 'speculative' });
    const after = str('after', false);
    if (after !== undefined && !ids.has(after))
      bad(`${at}: "after" names "${after}", which is not listed before it`, { jobId: id, field: 'after' });
    const placement = j.inputPlacement as Record<string, unknown> | undefined;
    if (
      placement !== undefined &&
      (typeof placement !== 'object' ||
        placement === null ||
        !Number.isInteger(placement.replication) ||
        (placement.replication as number) < 1 ||
        typeof placement.windowMs !== 'number' ||
        !(placement.windowMs >= 0))
    ) {
      bad(`${at}: "inputPlacement" must be { "replication": an integer >= 1, "windowMs": a number >= 0 }`, {
        jobId: id,
        field: 'inputPlacement',
      });
    }
    const optional = (field: string) => {
      const x = str(field, false);
      return x !== undefined ? { [field]: x } : {};
    };
    return {
      id,
      name: str('name', true)!,
      app: str('app', true)!,
      submitMs: j.submitMs as number,
      ...optional('pool'),
      ...optional('cluster'),
      ...optional('after'),
      ...optional('sizeClass'),
      ...(j.weight !== undefined ? { weight: j.weight as number } : {}),
      ...(j.referenceMs !== undefined ? { referenceMs: j.referenceMs as number } : {}),
      ...(j.speculative !== undefined ? { speculative: j.speculative as boolean } : {}),
      ...(placement !== undefined
        ? { inputPlacement: { replication: placement.replication as number, windowMs: placement.windowMs as number } }
        : {}),
      ...(j.skew !== undefined ? { skew: parseSkewSpec(j.skew, at) } : {}),
      maps: (j.maps as unknown[]).map((t, k) => taskFrom(t, `${at}: map ${k}`)),
      reduces: (j.reduces as unknown[]).map((t, k) => taskFrom(t, `${at}: reduce ${k}`)),
    };
  });
  const meta = w.meta;
  if (meta !== undefined && (typeof meta !== 'object' || meta === null || Array.isArray(meta)))
    bad(`${source}: "meta" must be an object`);
  return {
    name: typeof w.name === 'string' ? w.name : source,
    jobs,
    ...(w.pools !== undefined ? { pools: parsePools(w.pools) } : {}),
    ...(w.mrClusters !== undefined ? { mrClusters: mrClustersFrom(w.mrClusters, source) } : {}),
    ...(meta !== undefined ? { meta: meta as Record<string, string | number | boolean> } : {}),
  };
}

/** "mrClusters": [{"name", "minNodes", "inputBytes"?}], each name once. */
function mrClustersFrom(v: unknown, source: string): MrClusterSpec[] {
  if (!Array.isArray(v))
    return bad(`${source}: "mrClusters" must be an array of {"name", "minNodes", "inputBytes"?}`, {
      field: 'mrClusters',
    });
  const names = new Set<string>();
  return v.map((raw, i): MrClusterSpec => {
    const c = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    const name =
      typeof c.name === 'string' && c.name !== '' && c.name !== 'default'
        ? c.name
        : bad(`${source}: MR-cluster ${i + 1}: "name" must be a non-empty string other than "default"`, {
            field: 'mrClusters',
          });
    if (names.has(name)) bad(`${source}: MR-cluster "${name}" is listed twice`, { field: 'mrClusters' });
    names.add(name);
    if (!Number.isInteger(c.minNodes) || (c.minNodes as number) < 1)
      bad(`${source}: MR-cluster "${name}": "minNodes" must be a whole number >= 1`, { field: 'minNodes' });
    if (c.inputBytes !== undefined && !(typeof c.inputBytes === 'number' && c.inputBytes >= 0))
      bad(`${source}: MR-cluster "${name}": "inputBytes" must be a number >= 0`, { field: 'inputBytes' });
    return {
      name,
      minNodes: c.minNodes as number,
      ...(c.inputBytes !== undefined ? { inputBytes: c.inputBytes as number } : {}),
    };
  });
}

/**
 * Any of the three formats, told apart by content: minimr's has "format": "minimr-workload", a
 * Rumen job has "jobID" and "mapTasks", an SLS job "job.id" and other "job." fields; one missing
 * its id is still recognised by the others, so its error is about the id.
 */
export function readWorkloadFile(
  text: string,
  source: string,
  options: { defaultPenalty?: DssPenalty } = {},
): Workload {
  const head = text.trimStart();
  if (head.startsWith('{') && /"format"\s*:\s*"minimr-workload"/.test(text.slice(0, 4096)))
    return readWorkloadJson(text, source);
  const values = parseJsonStream(text, source, 'job object');
  const first = values.find((v) => !isClusterSizeHeader(v));
  if (isJsonObject(first) && ('jobID' in first || 'mapTasks' in first))
    return rumenWorkloadFromValues(values, { name: source });
  if (isJsonObject(first) && Object.keys(first).some((k) => k.startsWith('job.')))
    return slsWorkloadFromValues(values, { name: source, ...options });
  return bad(
    `${source}: expected a Hadoop SLS job trace (objects with ` +
      `"job.id", "job.tasks"), a Hadoop Rumen job trace (objects with ` +
      `"jobID", "mapTasks") ` +
      (`or minimr workload JSON ("format": "minimr-workload"); ` +
        `found ${describeJsonValues(first === undefined ? values : [first])}`),
  );
}

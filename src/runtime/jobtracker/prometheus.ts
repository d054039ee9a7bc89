/**
 * The JobTracker's `/metrics`, in Prometheus' text exposition format (version 0.0.4).
 *
 * A small formatter rather than `prom-client`: the figures are read from the books when scraped
 * (gauges) or counted as the JobTracker carries out the books' effects (counters, one histogram),
 * so none of prom-client's registry, collectors or default process metrics would be used, and the
 * format's few rules (names, label escaping, histogram buckets with `le`, `_sum`, `_count`) fit in
 * this file. Names follow Prometheus' conventions: base units (seconds, bytes), `_total` on
 * counters, and every family has HELP and TYPE lines.
 *
 * Counters are kept here, not recomputed from the jobs in memory, so they never go down when
 * finished jobs are retired from the JobTracker's memory.
 */
import type { Books, JobState } from '../../books/index.js';
import type { BlockStoreUsage } from '../../storage/index.js';
import type { RuntimeData } from './runtime-data.js';
import type { AttemptState, Counters, TaskKind } from '../wire/index.js';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface MetricSample {
  /** Suffix of the family name (`_bucket`, `_sum`, `_count` of a histogram), or '' */
  readonly suffix?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  readonly samples: readonly MetricSample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** The text format of the families, in order; names and label names are checked. */
export function formatPrometheus(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const f of families) {
    if (!METRIC_NAME.test(f.name)) throw new Error(`bad metric name ${f.name}`);
    lines.push(`# HELP ${f.name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      const labels = Object.entries(s.labels ?? {});
      for (const [k] of labels)
        if (!LABEL_NAME.test(k) || k.startsWith('__')) throw new Error(`bad label name ${k} on ${f.name}`);
      const labelText =
        labels.length > 0 ? `{${labels.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}` : '';
      lines.push(`${f.name}${s.suffix ?? ''}${labelText} ${formatValue(s.value)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** A cumulative histogram with fixed upper bounds, as Prometheus keeps one. */
export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }

  observe(v: number): void {
    this.sum += v;
    this.count++;
    for (let i = 0; i < this.bounds.length; i++) if (v <= this.bounds[i]!) this.counts[i]!++;
  }

  samples(labels: Readonly<Record<string, string>> = {}): MetricSample[] {
    return [
      ...this.bounds.map((b, i) => ({
        suffix: '_bucket',
        labels: { ...labels, le: formatValue(b) },
        value: this.counts[i]!,
      })),
      { suffix: '_bucket', labels: { ...labels, le: '+Inf' }, value: this.count },
      { suffix: '_sum', labels, value: this.sum },
      { suffix: '_count', labels, value: this.count },
    ];
  }
}

/** What a scrape reads of the cluster as it is now. */
export interface ClusterGauges {
  readonly jobs: readonly { readonly state: JobState }[];
  readonly workers: readonly {
    readonly id: string;
    readonly mapSlots: number;
    readonly reduceSlots: number;
    readonly memoryMb: number;
    readonly lastHeartbeat: number;
    readonly running: readonly { readonly kind: TaskKind; readonly memoryMb: number; readonly elastic: boolean }[];
  }[];
  readonly now: number;
  readonly heartbeatMs: number;
  readonly blockStore?: { readonly files: number; readonly blocks: number; readonly bytes: number };
}

const MIB = 1024 * 1024;
const KINDS: readonly TaskKind[] = ['map', 'reduce'];
/** Counters of ended attempts summed into `/metrics`, by their counter name. */
const ATTEMPT_COUNTER_TOTALS: ReadonlyArray<{
  counter: string;
  name: string;
  help: string;
  labels?: Record<string, string>;
}> = [
  {
    counter: 'SHUFFLE_BYTES_LOCAL',
    name: 'minimr_shuffle_bytes_total',
    help: 'Map output bytes reduces fetched',
    labels: { locality: 'local' },
  },
  {
    counter: 'SHUFFLE_BYTES_REMOTE',
    name: 'minimr_shuffle_bytes_total',
    help: 'Map output bytes reduces fetched',
    labels: { locality: 'remote' },
  },
  {
    counter: 'SPILLS',
    name: 'minimr_spills_total',
    help: 'Spills to disk by map sort buffers and reduce merges, of attempts that ended',
  },
  {
    counter: 'SPILLED_BYTES',
    name: 'minimr_spilled_bytes_total',
    help: 'Bytes spilled to disk, of attempts that ended',
  },
];

/**
 * The JobTracker's metrics: counters it bumps as it carries out the books' effects, and gauges
 * read from the books at scrape time.
 */
export class PrometheusMetrics {
  private jobsSubmitted = 0;
  private readonly jobsEnded = new Map<JobState, number>();
  private readonly attemptsLaunched = new Map<TaskKind, number>();
  private readonly attemptsEnded = new Map<string, number>();
  private readonly counterTotals = new Map<string, number>();
  private readonly heartbeatGaps = new Histogram([0.1, 0.25, 0.5, 1, 2, 5, 10, 30]);
  private readonly lastHeartbeatOf = new Map<string, number>();

  jobSubmitted(): void {
    this.jobsSubmitted++;
  }

  jobEnded(state: JobState): void {
    this.jobsEnded.set(state, (this.jobsEnded.get(state) ?? 0) + 1);
  }

  attemptLaunched(kind: TaskKind): void {
    this.attemptsLaunched.set(kind, (this.attemptsLaunched.get(kind) ?? 0) + 1);
  }

  attemptEnded(kind: TaskKind, state: AttemptState, counters: Counters): void {
    const key = `${kind}\u0000${state}`;
    this.attemptsEnded.set(key, (this.attemptsEnded.get(key) ?? 0) + 1);
    for (const c of ATTEMPT_COUNTER_TOTALS) {
      const v = counters[c.counter];
      if (typeof v === 'number' && Number.isFinite(v))
        this.counterTotals.set(c.counter, (this.counterTotals.get(c.counter) ?? 0) + v);
    }
  }

  /** A worker's heartbeat arrived at `now` (ms): the gap since its previous one is observed. */
  heartbeat(workerId: string, now: number): void {
    const previous = this.lastHeartbeatOf.get(workerId);
    if (previous !== undefined) this.heartbeatGaps.observe(Math.max(0, now - previous) / 1000);
    this.lastHeartbeatOf.set(workerId, now);
  }

  /** A worker that left: its next heartbeat (after it registers again) starts a new series. */
  workerLeft(workerId: string): void {
    this.lastHeartbeatOf.delete(workerId);
  }

  families(g: ClusterGauges): MetricFamily[] {
    const jobsByState = new Map<JobState, number>();
    for (const j of g.jobs) jobsByState.set(j.state, (jobsByState.get(j.state) ?? 0) + 1);
    const running = g.workers.flatMap((w) => w.running);
    const slots = (kind: TaskKind) => g.workers.reduce((s, w) => s + (kind === 'map' ? w.mapSlots : w.reduceSlots), 0);
    const families: MetricFamily[] = [
      { name: 'minimr_workers', help: 'Live workers', type: 'gauge', samples: [{ value: g.workers.length }] },
      {
        name: 'minimr_jobs',
        help: 'Jobs the JobTracker holds in memory, by state',
        type: 'gauge',
        samples: (['pending', 'running', 'committing', 'succeeded', 'failed', 'killed'] as const).map((state) => ({
          labels: { state },
          value: jobsByState.get(state) ?? 0,
        })),
      },
      {
        name: 'minimr_jobs_submitted_total',
        help: 'Jobs submitted since the JobTracker started',
        type: 'counter',
        samples: [{ value: this.jobsSubmitted }],
      },
      {
        name: 'minimr_jobs_ended_total',
        help: 'Jobs that ended since the JobTracker started, by final state',
        type: 'counter',
        samples: (['succeeded', 'failed', 'killed'] as const).map((state) => ({
          labels: { state },
          value: this.jobsEnded.get(state) ?? 0,
        })),
      },
      {
        name: 'minimr_attempts',
        help: 'Attempts running now, by task kind',
        type: 'gauge',
        samples: KINDS.map((kind) => ({
          labels: { kind, state: 'running' },
          value: running.filter((a) => a.kind === kind).length,
        })),
      },
      {
        name: 'minimr_attempts_launched_total',
        help: 'Attempts launched since the JobTracker started, by task kind',
        type: 'counter',
        samples: KINDS.map((kind) => ({ labels: { kind }, value: this.attemptsLaunched.get(kind) ?? 0 })),
      },
      {
        name: 'minimr_attempts_ended_total',
        help: 'Attempts that ended since the JobTracker started, by task kind and final state',
        type: 'counter',
        samples: KINDS.flatMap((kind) =>
          (['succeeded', 'failed', 'killed'] as const).map((state) => ({
            labels: { kind, state },
            value: this.attemptsEnded.get(`${kind}\u0000${state}`) ?? 0,
          })),
        ),
      },
      {
        name: 'minimr_slots',
        help: 'Task slots of the live workers, by kind',
        type: 'gauge',
        samples: KINDS.map((kind) => ({ labels: { kind }, value: slots(kind) })),
      },
      {
        name: 'minimr_slots_busy',
        help: 'Task slots running an attempt, by kind',
        type: 'gauge',
        samples: KINDS.map((kind) => ({ labels: { kind }, value: running.filter((a) => a.kind === kind).length })),
      },
      {
        name: 'minimr_memory_bytes',
        help: 'Memory the live workers offer to tasks',
        type: 'gauge',
        samples: [{ value: g.workers.reduce((s, w) => s + w.memoryMb, 0) * MIB }],
      },
      {
        name: 'minimr_memory_granted_bytes',
        help: 'Memory granted to running attempts, regular or elastic (below their ideal, YARN-ME)',
        type: 'gauge',
        samples: (['regular', 'elastic'] as const).map((grant) => ({
          labels: { grant },
          value: running.filter((a) => a.elastic === (grant === 'elastic')).reduce((s, a) => s + a.memoryMb, 0) * MIB,
        })),
      },
    ];
    const byName = new Map<string, MetricSample[]>();
    for (const c of ATTEMPT_COUNTER_TOTALS) {
      const list = byName.get(c.name) ?? [];
      list.push({ ...(c.labels ? { labels: c.labels } : {}), value: this.counterTotals.get(c.counter) ?? 0 });
      byName.set(c.name, list);
    }
    for (const [name, samples] of byName)
      families.push({
        name,
        help: ATTEMPT_COUNTER_TOTALS.find((c) => c.name === name)!.help,
        type: 'counter',
        samples,
      });
    families.push(
      {
        name: 'minimr_heartbeat_interval_seconds',
        help: 'Heartbeat interval the workers are told',
        type: 'gauge',
        samples: [{ value: g.heartbeatMs / 1000 }],
      },
      {
        name: 'minimr_heartbeat_gap_seconds',
        help: 'Time between two heartbeats of a worker, as the JobTracker received them',
        type: 'histogram',
        samples: this.heartbeatGaps.samples(),
      },
      {
        name: 'minimr_worker_heartbeat_age_seconds',
        help: "Time since each live worker's last heartbeat",
        type: 'gauge',
        samples: g.workers.map((w) => ({
          labels: { worker: w.id },
          value: Math.max(0, g.now - w.lastHeartbeat) / 1000,
        })),
      },
    );
    if (g.blockStore) {
      families.push(
        {
          name: 'minimr_blockstore_files',
          help: 'Files in the block store namespace',
          type: 'gauge',
          samples: [{ value: g.blockStore.files }],
        },
        {
          name: 'minimr_blockstore_blocks',
          help: 'Blocks of those files',
          type: 'gauge',
          samples: [{ value: g.blockStore.blocks }],
        },
        {
          name: 'minimr_blockstore_bytes',
          help: 'Bytes of those files (one replica)',
          type: 'gauge',
          samples: [{ value: g.blockStore.bytes }],
        },
      );
    }
    return families;
  }
}

/** The text of `/metrics` for the books as they are now. */
export function prometheusText(
  metrics: PrometheusMetrics,
  books: Books<RuntimeData>,
  blockStore: BlockStoreUsage,
  now: number,
  heartbeatMs: number,
): string {
  return formatPrometheus(
    metrics.families({
      jobs: [...books.jobs()],
      workers: books.liveWorkers().map((w) => ({
        id: w.shape.id,
        mapSlots: w.shape.mapSlots,
        reduceSlots: w.shape.reduceSlots,
        memoryMb: w.shape.memoryMb,
        lastHeartbeat: w.data.lastHeartbeat,
        running: [...w.running].map((a) => ({ kind: a.task.kind, memoryMb: a.memoryMb, elastic: a.elastic })),
      })),
      now,
      heartbeatMs,
      blockStore,
    }),
  );
}

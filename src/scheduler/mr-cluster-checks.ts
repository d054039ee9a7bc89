/**
 * What a decision list must respect on a pool split into MR-clusters (FAWKES), beside what every
 * list must (validate.ts): a job's tasks run only on its own cluster's nodes, and never on one that
 * is draining out of it; a shrink never takes a cluster's core nodes below its minimum share, and
 * takes transient-core nodes in non-decreasing order of the bytes they store (the cheapest to drain
 * first); only an active cluster without jobs is deactivated. Without MR-clusters in the snapshot
 * the moves are labels only, as before there were MR-clusters, and only their shape is checked.
 */
import type { ClusterSnapshot, Decision, MrClusterView, NodeKind, WorkerView } from './types.js';

/** The cluster of workers that belong to no MR-cluster: the free pool MR-clusters grow from. */
export const FREE_POOL = 'default';

const NODE_KINDS: ReadonlySet<string> = new Set<NodeKind>(['core', 'transient', 'transient-core']);
const PREEMPTIONS: ReadonlySet<string> = new Set(['instant', 'delayed']);

type MoveNode = Extract<Decision, { kind: 'move-node' }>;

export function mrClusterProblems(snapshot: ClusterSnapshot, decisions: readonly Decision[]): string[] {
  const problems: string[] = [];
  const clusters = new Map((snapshot.mrClusters ?? []).map((c) => [c.name, c]));
  const inUse = snapshot.mrClusters !== undefined && snapshot.mrClusters.length > 0;
  const workers = new Map(snapshot.workers.map((w) => [w.id, w]));
  const jobClusters = new Map(snapshot.jobs.map((j) => [j.id, j.cluster]));
  const moving = new Set(decisions.flatMap((d) => (d.kind === 'move-node' ? [d.workerId] : [])));
  const deactivated = new Set<string>();
  for (const [i, d] of decisions.entries()) {
    const at = `decision ${i}`;
    switch (d.kind) {
      case 'launch': {
        const w = workers.get(d.workerId);
        const cluster = jobClusters.get(d.jobId);
        if (!w || !inUse) break;
        if (w.leavingFor !== undefined)
          problems.push(`${at}: launches on worker ${w.id}, which is draining out of MR-cluster ${w.cluster}`);
        if (cluster !== undefined && cluster !== w.cluster)
          problems.push(
            `${at}: launches a task of ${d.jobId} (MR-cluster ${cluster}) on worker ${w.id} of MR-cluster ${w.cluster}`,
          );
        break;
      }
      case 'move-node':
        if (d.nodeKind !== undefined && !NODE_KINDS.has(d.nodeKind))
          problems.push(`${at}: node kind "${String(d.nodeKind)}" (core, transient, transient-core)`);
        if (d.preemption !== undefined && !PREEMPTIONS.has(d.preemption))
          problems.push(`${at}: preemption "${String(d.preemption)}" (instant, delayed)`);
        if (inUse) problems.push(...moveProblems(at, d, workers, clusters, moving));
        break;
      case 'deactivate-cluster': {
        const c = clusters.get(d.cluster);
        if (!c) problems.push(`${at}: deactivates unknown MR-cluster "${d.cluster}"`);
        else if (c.state !== 'active') problems.push(`${at}: deactivates MR-cluster ${d.cluster}, which is ${c.state}`);
        else if (snapshot.jobs.some((j) => j.cluster === d.cluster))
          problems.push(`${at}: deactivates MR-cluster ${d.cluster}, which has jobs`);
        if (deactivated.has(d.cluster)) problems.push(`${at}: deactivates MR-cluster ${d.cluster} twice`);
        deactivated.add(d.cluster);
        break;
      }
      default:
        break;
    }
  }
  return problems;
}

function moveProblems(
  at: string,
  d: MoveNode,
  workers: ReadonlyMap<string, WorkerView>,
  clusters: ReadonlyMap<string, MrClusterView>,
  moving: ReadonlySet<string>,
): string[] {
  const problems: string[] = [];
  const w = workers.get(d.workerId);
  if (!w) return problems;
  const target = clusters.get(d.toCluster);
  if (d.toCluster !== FREE_POOL && (!target || target.state === 'queued' || target.state === 'deactivating')) {
    problems.push(
      `${at}: moves worker ${w.id} to MR-cluster "${d.toCluster}", which is ${target ? target.state : 'unknown'}`,
    );
  }
  if (w.leavingFor !== undefined)
    problems.push(`${at}: moves worker ${w.id}, which is already draining toward ${w.leavingFor}`);
  if (d.toCluster === w.cluster) problems.push(`${at}: moves worker ${w.id} to the MR-cluster it is in (${w.cluster})`);
  const source = clusters.get(w.cluster);
  if (!source || problems.length > 0) return problems;
  if (source.state === 'deactivating')
    return [
      `${at}: moves worker ${w.id} out of MR-cluster ${source.name}, ` +
        `which releases its nodes itself once its output is saved`,
    ];
  const staying = [...workers.values()].filter(
    (o) => o.cluster === w.cluster && o.leavingFor === undefined && !moving.has(o.id),
  );
  if (w.nodeKind === 'core' && (source.state === 'active' || source.state === 'activating')) {
    const cores = staying.filter((o) => o.nodeKind === 'core').length;
    if (cores < source.minNodes)
      problems.push(
        `${at}: moving core node ${w.id} leaves ` +
          `MR-cluster ${source.name} ${cores} core nodes, below its ` +
          `minimum share of ${source.minNodes}`,
      );
  }
  if (w.nodeKind === 'transient-core') {
    const lighter = staying.find((o) => o.nodeKind === 'transient-core' && (o.storedBytes ?? 0) < (w.storedBytes ?? 0));
    if (lighter)
      problems.push(
        `${at}: transient-core node ${w.id} (${w.storedBytes ?? 0} ` +
          `bytes stored) leaves ${source.name} before ${lighter.id} ` +
          `(${lighter.storedBytes ?? 0} bytes)`,
      );
  }
  return problems;
}

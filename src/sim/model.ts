/**
 * The simulator's cost model: how long an attempt takes given its memory grant and where its input
 * is, and where input replicas go. The seeded per-attempt draws (noise, failures), which must not
 * depend on the order in which events happen to be processed, come from `streamFor` (src/util),
 * which the workload generators share.
 */
import { DEFAULT_DISK_MBPS, type PenaltyModel } from '../scheduler/index.js';
import type { WorkerShape } from '../workloads/index.js';

export const MiB = 1024 * 1024;

/**
 * The penalty model as a policy is told it when its estimate is off by `scale` (> 0): a step
 * model's factor times `scale` (at least 1), a power model's exponent times `scale`, a spill
 * model's extra time times `scale` (its disk rate divided by it; a model without its own rate
 * gets the default one's, so the scale shows).
 */
export function misestimatedPenalty(p: PenaltyModel, scale: number): PenaltyModel {
  if (p.kind === 'step') return { ...p, factor: Math.max(1, p.factor * scale) };
  if (p.kind === 'spill') return { ...p, diskMBps: (p.diskMBps ?? DEFAULT_DISK_MBPS) / scale };
  if (p.kind === 'power') return { ...p, exponent: p.exponent * scale };
  return p;
}

/** Time to pull `bytes` over the network at `mbps` MB/s. */
export function transferMs(bytes: number, mbps: number): number {
  return mbps > 0 ? (bytes / (mbps * MiB)) * 1000 : 0;
}

/** Workers grouped by rack, for placing replicas on big clusters without scanning them all. */
export class RackIndex {
  readonly byRack = new Map<string, WorkerShape[]>();
  constructor(readonly workers: readonly WorkerShape[]) {
    for (const w of workers) {
      const list = this.byRack.get(w.rack);
      if (list) list.push(w);
      else this.byRack.set(w.rack, [w]);
    }
  }
}

/**
 * HDFS's default placement, seeded: replica 1 on a random node, replica 2 on a random node of
 * another rack, replica 3 on another node of replica 2's rack, further ones on random unused
 * nodes. With one rack, every replica after the first goes to a random unused node. Candidates
 * are drawn by rejection (a few tries) before falling back to a scan, so placement stays cheap on
 * 3000-node clusters.
 */
export function placeReplicas(index: RackIndex, replication: number, rand: () => number): string[] {
  const workers = index.workers;
  const count = Math.min(replication, workers.length);
  const chosen: WorkerShape[] = [];
  const pick = (pool: readonly WorkerShape[], ok: (w: WorkerShape) => boolean): boolean => {
    for (let tries = 0; tries < 16 && pool.length > 0; tries++) {
      const w = pool[Math.floor(rand() * pool.length)]!;
      if (ok(w)) {
        chosen.push(w);
        return true;
      }
    }
    const candidates = pool.filter(ok);
    if (candidates.length === 0) return false;
    chosen.push(candidates[Math.floor(rand() * candidates.length)]!);
    return true;
  };
  const unused = (w: WorkerShape): boolean => !chosen.includes(w);
  while (chosen.length < count) {
    if (chosen.length === 1 && index.byRack.size > 1) {
      const firstRack = chosen[0]!.rack;
      if (pick(workers, (w) => w.rack !== firstRack)) continue;
    } else if (chosen.length === 2 && chosen[0]!.rack !== chosen[1]!.rack) {
      if (pick(index.byRack.get(chosen[1]!.rack)!, unused)) continue;
    }
    if (!pick(workers, unused)) break;
  }
  return chosen.map((w) => w.id);
}

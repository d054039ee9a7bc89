import type { ClientLocation, DatanodeAddress } from './types.js';

export interface PlacementNode {
  readonly address: DatanodeAddress;
  /** Blocks the NameNode believes the node stores (including ones being written): the load measure. */
  readonly blockCount: number;
  /**
   * Share of the node's capacity still free for new replicas (its last reported free space less what is being
   * written to it, over its capacity); undefined when it has not reported its space.
   */
  readonly freeFraction?: number;
}

/**
 * Free-space fractions closer than this are taken as equal (HDFS's available-space policy's balanced-space
 * tolerance), so that nodes on disks alike in fullness are chosen by load, not by the noise of their reports.
 */
export const FREE_SPACE_BUCKET = 0.05;

export interface PlacementRequest {
  readonly nodes: readonly PlacementNode[];
  /** How many new replicas to place. */
  readonly count: number;
  readonly writer?: ClientLocation;
  /** Replicas that already exist (re-replication): they count as the first ones placed. */
  readonly existing?: readonly DatanodeAddress[];
}

/** A node that has not reported its space ranks with the fullest: one that did is known to have room. */
function spaceBucket(node: PlacementNode): number {
  return node.freeFraction === undefined ? 0 : Math.floor(Math.max(0, node.freeFraction) / FREE_SPACE_BUCKET);
}

/** More free space first (HDFS's available-space placement), then the least-loaded, then the smallest id. */
function bySpaceThenLoadThenId(a: PlacementNode, b: PlacementNode): number {
  return (
    spaceBucket(b) - spaceBucket(a) ||
    a.blockCount - b.blockCount ||
    (a.address.workerId < b.address.workerId ? -1 : a.address.workerId > b.address.workerId ? 1 : 0)
  );
}

/**
 * HDFS's default policy: replica 1 on the writer (it costs no network), replica 2 off-rack (survives
 * a rack loss), replica 3 on replica 2's rack (cheap in-rack copy), the rest spread over racks.
 * Among the candidates of each step the one with the most free space goes first (in steps of
 * FREE_SPACE_BUCKET, HDFS's available-space placement), then the least-loaded node, then the
 * smallest workerId, so placement is reproducible. `nodes` holds only nodes with room for the block:
 * the NameNode leaves out full ones.
 */
export function chooseTargets(request: PlacementRequest): DatanodeAddress[] {
  const chosen: DatanodeAddress[] = [...(request.existing ?? [])];
  const taken = new Set(chosen.map((a) => a.workerId));
  const candidates = [...request.nodes].filter((n) => !taken.has(n.address.workerId)).sort(bySpaceThenLoadThenId);
  const placed: DatanodeAddress[] = [];

  const take = (predicate: (n: PlacementNode) => boolean): boolean => {
    const index = candidates.findIndex(predicate);
    if (index < 0) return false;
    const [node] = candidates.splice(index, 1);
    chosen.push(node!.address);
    placed.push(node!.address);
    return true;
  };
  const rackUse = (rack: string): number => chosen.filter((a) => a.rack === rack).length;

  while (placed.length < request.count && candidates.length > 0) {
    const position = chosen.length;
    if (position === 0) {
      const writerId = request.writer?.workerId;
      if (writerId !== undefined && take((n) => n.address.workerId === writerId)) continue;
      take(() => true);
    } else if (position === 1) {
      const firstRack = chosen[0]!.rack;
      if (!take((n) => n.address.rack !== firstRack)) take(() => true);
    } else if (
      position === 2 &&
      chosen[0]!.rack !== chosen[1]!.rack &&
      take((n) => n.address.rack === chosen[1]!.rack)
    ) {
      // biome-ignore lint/complexity/noUselessContinue: this arm's work is the take() in its condition
      continue;
    } else {
      // Least-used rack first; `candidates` is already load-ordered, so a stable sort keeps that order within a rack.
      const ranked = [...candidates].sort((a, b) => rackUse(a.address.rack) - rackUse(b.address.rack));
      const pick = ranked[0]!;
      take((n) => n === pick);
    }
  }
  return placed;
}

/** The client's own worker first, then its rack, then the rest; stable within each group. */
export function sortByDistance(locations: readonly DatanodeAddress[], client?: ClientLocation): DatanodeAddress[] {
  const distance = (a: DatanodeAddress): number => {
    if (client?.workerId !== undefined && a.workerId === client.workerId) return 0;
    if (client?.rack !== undefined && a.rack === client.rack) return 1;
    return 2;
  };
  return locations
    .map((address, index) => ({ address, index, d: distance(address) }))
    .sort((a, b) => a.d - b.d || a.index - b.index)
    .map((entry) => entry.address);
}

/**
 * Where a replica an upload still owes goes when no scheduler placed it (the close of an
 * `InputPlacement` window): a rack-mate of the first existing replica, as a favored write keeps
 * a data set on its owner's rack, rotating with `index` (the block's or map's number) so a file's
 * blocks spread over that rack; another rack only when the rack has no free node. Both the
 * JobTracker and the simulator use it, so they complete the same replicas on the same workers.
 */
export function owedReplicaTarget(
  holders: readonly string[],
  workers: readonly { readonly id: string; readonly rack: string }[],
  index: number,
): string | undefined {
  const held = new Set(holders);
  const rack = workers.find((w) => w.id === holders[0])?.rack;
  const byId = (a: { readonly id: string }, b: { readonly id: string }): number =>
    a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  const free = workers.filter((w) => !held.has(w.id)).sort(byId);
  const mates = free.filter((w) => w.rack === rack);
  const pool = mates.length > 0 ? mates : free;
  return pool.length === 0 ? undefined : pool[index % pool.length]!.id;
}

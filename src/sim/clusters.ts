/**
 * Cluster shapes from the papers (metrics-and-workloads.md), as named presets, and the JSON form a
 * user can write for `minimr sim --cluster path.json`.
 */
import { MinimrError } from '../errors.js';
import type { ClusterShape, WorkerShape } from './types.js';

export interface UniformClusterOptions {
  readonly name: string;
  readonly workers: number;
  /** Workers per rack; the last rack may be smaller. */
  readonly perRack: number;
  readonly mapSlots: number;
  readonly reduceSlots: number;
  readonly memoryMb: number;
  readonly diskMBps: number;
}

/** Workers w0001.. in racks rack01.., `perRack` to a rack, all alike. */
export function uniformCluster(o: UniformClusterOptions): ClusterShape {
  const width = String(o.workers).length < 4 ? 4 : String(o.workers).length;
  const rackWidth = Math.max(2, String(Math.ceil(o.workers / o.perRack)).length);
  const workers: WorkerShape[] = Array.from({ length: o.workers }, (_, i) => ({
    id: `w${String(i + 1).padStart(width, '0')}`,
    rack: `rack${String(Math.floor(i / o.perRack) + 1).padStart(rackWidth, '0')}`,
    mapSlots: o.mapSlots,
    reduceSlots: o.reduceSlots,
    memoryMb: o.memoryMb,
    diskMBps: o.diskMBps,
  }));
  return { name: o.name, workers };
}

const GiB_MB = 1024;

/**
 * YARN-ME nodes have cores, not map and reduce slots. The 50-node cluster runs real MapReduce apps,
 * so each core is offered as a map slot and as a reduce slot (memory is what really limits them);
 * the simulation shapes run one-phase traces, so their cores are map slots only.
 */
const PRESETS: ReadonlyMap<string, () => ClusterShape> = new Map([
  ['tyrex-20', () => uniformCluster({ name: 'tyrex-20', workers: 20, perRack: 10, mapSlots: 6, reduceSlots: 2, memoryMb: 16 * GiB_MB, diskMBps: 100 })],
  ['improved-fair-12', () => uniformCluster({ name: 'improved-fair-12', workers: 12, perRack: 4, mapSlots: 8, reduceSlots: 2, memoryMb: 16 * GiB_MB, diskMBps: 50 })],
  ['fawkes-60', () => uniformCluster({ name: 'fawkes-60', workers: 60, perRack: 20, mapSlots: 6, reduceSlots: 2, memoryMb: 24 * GiB_MB, diskMBps: 100 })],
  ['fawkes-48', () => uniformCluster({ name: 'fawkes-48', workers: 48, perRack: 16, mapSlots: 6, reduceSlots: 2, memoryMb: 24 * GiB_MB, diskMBps: 100 })],
  ['yarn-me-50', () => uniformCluster({ name: 'yarn-me-50', workers: 50, perRack: 25, mapSlots: 14, reduceSlots: 14, memoryMb: 10 * GiB_MB, diskMBps: 100 })],
  ['yarn-me-100', () => uniformCluster({ name: 'yarn-me-100', workers: 100, perRack: 20, mapSlots: 16, reduceSlots: 0, memoryMb: 10 * GiB_MB, diskMBps: 100 })],
  ['yarn-me-3000', () => uniformCluster({ name: 'yarn-me-3000', workers: 3000, perRack: 40, mapSlots: 16, reduceSlots: 0, memoryMb: 10 * GiB_MB, diskMBps: 100 })],
]);

export function clusterPresetNames(): readonly string[] {
  return [...PRESETS.keys()];
}

export function clusterPreset(name: string): ClusterShape {
  const make = PRESETS.get(name);
  if (!make) throw new MinimrError('EBADCONF', `unknown cluster preset "${name}"; presets: ${clusterPresetNames().join(', ')}, or a JSON file`);
  return make();
}

/** A cluster from JSON: {"name": ..., "workers": [{id, rack, mapSlots, reduceSlots, memoryMb, diskMBps}]}. */
export function parseClusterJson(value: unknown, source = 'cluster'): ClusterShape {
  const fail = (message: string): never => {
    throw new MinimrError('EBADCONF', `${source}: ${message}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('expected an object {name, workers: [...]}');
  const v = value as Record<string, unknown>;
  if (!Array.isArray(v.workers) || v.workers.length === 0) fail('"workers" must be a non-empty array');
  const seen = new Set<string>();
  const workers = (v.workers as unknown[]).map((raw, i): WorkerShape => {
    if (typeof raw !== 'object' || raw === null) return fail(`worker ${i} is not an object`);
    const w = raw as Record<string, unknown>;
    const id = typeof w.id === 'string' && w.id !== '' ? w.id : fail(`worker ${i}: "id" must be a non-empty string`);
    if (seen.has(id)) fail(`worker "${id}" is listed twice`);
    seen.add(id);
    const count = (field: string): number => {
      const x = w[field];
      return Number.isInteger(x) && (x as number) >= 0 ? (x as number) : fail(`worker "${id}": "${field}" must be a non-negative integer`);
    };
    const disk = w.diskMBps ?? 0;
    if (typeof disk !== 'number' || !(disk >= 0)) fail(`worker "${id}": "diskMBps" must be a number >= 0`);
    return {
      id,
      rack: typeof w.rack === 'string' && w.rack !== '' ? w.rack : fail(`worker "${id}": "rack" must be a non-empty string`),
      ...(typeof w.host === 'string' ? { host: w.host } : {}),
      ...(typeof w.cluster === 'string' ? { cluster: w.cluster } : {}),
      mapSlots: count('mapSlots'),
      reduceSlots: count('reduceSlots'),
      memoryMb: count('memoryMb'),
      diskMBps: disk as number,
    };
  });
  return { name: typeof v.name === 'string' ? v.name : source, workers };
}

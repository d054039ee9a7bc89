/**
 * Cluster shapes from the papers (docs/specs/metrics-and-workloads.md), as named presets, and the files
 * `minimr sim --cluster path.json` reads: minimr's cluster JSON and Hadoop SLS node files.
 */
import { MinimrError } from '../errors.js';
import { describeJsonValues, isJsonObject, parseJsonStream } from './json-stream.js';
import type { ClusterShape, HostShape, WorkerShape } from './types.js';

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
  [
    'tyrex-20',
    () =>
      uniformCluster({
        name: 'tyrex-20',
        workers: 20,
        perRack: 10,
        mapSlots: 6,
        reduceSlots: 2,
        memoryMb: 16 * GiB_MB,
        diskMBps: 100,
      }),
  ],
  [
    'improved-fair-12',
    () =>
      uniformCluster({
        name: 'improved-fair-12',
        workers: 12,
        perRack: 4,
        mapSlots: 8,
        reduceSlots: 2,
        memoryMb: 16 * GiB_MB,
        diskMBps: 50,
      }),
  ],
  [
    'fawkes-60',
    () =>
      uniformCluster({
        name: 'fawkes-60',
        workers: 60,
        perRack: 20,
        mapSlots: 6,
        reduceSlots: 2,
        memoryMb: 24 * GiB_MB,
        diskMBps: 100,
      }),
  ],
  [
    'fawkes-48',
    () =>
      uniformCluster({
        name: 'fawkes-48',
        workers: 48,
        perRack: 16,
        mapSlots: 6,
        reduceSlots: 2,
        memoryMb: 24 * GiB_MB,
        diskMBps: 100,
      }),
  ],
  [
    'yarn-me-50',
    () =>
      uniformCluster({
        name: 'yarn-me-50',
        workers: 50,
        perRack: 25,
        mapSlots: 14,
        reduceSlots: 14,
        memoryMb: 10 * GiB_MB,
        diskMBps: 100,
      }),
  ],
  [
    'yarn-me-100',
    () =>
      uniformCluster({
        name: 'yarn-me-100',
        workers: 100,
        perRack: 20,
        mapSlots: 16,
        reduceSlots: 0,
        memoryMb: 10 * GiB_MB,
        diskMBps: 100,
      }),
  ],
  [
    'yarn-me-3000',
    () =>
      uniformCluster({
        name: 'yarn-me-3000',
        workers: 3000,
        perRack: 40,
        mapSlots: 16,
        reduceSlots: 0,
        memoryMb: 10 * GiB_MB,
        diskMBps: 100,
      }),
  ],
]);

export function clusterPresetNames(): readonly string[] {
  return [...PRESETS.keys()];
}

export function clusterPreset(name: string): ClusterShape {
  const make = PRESETS.get(name);
  if (!make)
    throw new MinimrError(
      'EBADCONF',
      `unknown cluster preset "${name}"; presets: ${clusterPresetNames().join(', ')}, or a JSON file`,
    );
  return make();
}

/**
 * A cluster from JSON: {"name": ..., "workers": [{id, rack, host?, mapSlots, reduceSlots, memoryMb,
 * diskMBps, cpuThrottle?}], "hosts"?: {"<host>": {"cores": n}}}. "hosts" turns on CPU sharing for the hosts it
 * lists (ClusterShape.hosts).
 */
export function parseClusterJson(value: unknown, source = 'cluster'): ClusterShape {
  const fail = (message: string, details: Record<string, string> = {}): never => {
    throw new MinimrError('EBADCONF', `${source}: ${message}`, details);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    fail('expected an object {name, workers: [...]}');
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
      return Number.isInteger(x) && (x as number) >= 0
        ? (x as number)
        : fail(`worker "${id}": "${field}" must be a non-negative integer`);
    };
    const disk = w.diskMBps ?? 0;
    if (typeof disk !== 'number' || !(disk >= 0)) fail(`worker "${id}": "diskMBps" must be a number >= 0`);
    if (w.host !== undefined && !(typeof w.host === 'string' && w.host !== ''))
      fail(`worker "${id}": "host" must be a non-empty string`, { field: 'host' });
    const throttle = w.cpuThrottle;
    if (throttle !== undefined && !(typeof throttle === 'number' && Number.isFinite(throttle) && throttle > 0))
      fail(`worker "${id}": "cpuThrottle" must be a positive number`, { field: 'cpuThrottle' });
    return {
      id,
      rack:
        typeof w.rack === 'string' && w.rack !== ''
          ? w.rack
          : fail(`worker "${id}": "rack" must be a non-empty string`),
      ...(typeof w.host === 'string' ? { host: w.host } : {}),
      ...(typeof w.cluster === 'string' ? { cluster: w.cluster } : {}),
      mapSlots: count('mapSlots'),
      reduceSlots: count('reduceSlots'),
      memoryMb: count('memoryMb'),
      diskMBps: disk as number,
      ...(throttle !== undefined ? { cpuThrottle: throttle as number } : {}),
    };
  });
  const hosts = v.hosts === undefined ? undefined : parseHosts(v.hosts, workers, fail);
  return { name: typeof v.name === 'string' ? v.name : source, workers, ...(hosts !== undefined ? { hosts } : {}) };
}

/** "hosts": {"<host>": {"cores": n}}, each a host of some worker (its "host", else its id). */
function parseHosts(
  value: unknown,
  workers: readonly WorkerShape[],
  fail: (message: string, details?: Record<string, string>) => never,
): Record<string, HostShape> {
  if (!isJsonObject(value)) return fail('"hosts" must be an object {"<host>": {"cores": n}, ...}', { field: 'hosts' });
  const known = new Set(workers.map((w) => w.host ?? w.id));
  const hosts: Array<[string, HostShape]> = [];
  for (const [host, raw] of Object.entries(value)) {
    // A host no worker names is most likely a misspelt one, whose workers would silently run at full speed.
    if (!known.has(host))
      fail(`"hosts": "${host}" is the host of no worker (a worker's "host", else its "id")`, { field: 'hosts', host });
    const cores = isJsonObject(raw) ? raw.cores : undefined;
    if (!(typeof cores === 'number' && Number.isFinite(cores) && cores > 0))
      fail(`"hosts": "${host}": "cores" must be a positive number, got ${JSON.stringify(cores)}`, {
        field: 'cores',
        host,
      });
    hosts.push([host, { cores: cores as number }]);
  }
  return Object.fromEntries(hosts);
}

/**
 * YARN-ME's meganode (docs/specs/yarn-me.md): the whole cluster's slots, memory and disk pooled in one
 * worker, so no task ever waits for memory that is free but spread over nodes. Under `srjf` it is
 * the paper's idealized bound for elasticity-agnostic schedulers.
 */
export function meganode(cluster: ClusterShape): ClusterShape {
  const sum = (f: (w: WorkerShape) => number) => cluster.workers.reduce((s, w) => s + f(w), 0);
  return {
    name: `${cluster.name}-meganode`,
    workers: [
      {
        id: 'meganode',
        rack: 'mega',
        mapSlots: sum((w) => w.mapSlots),
        reduceSlots: sum((w) => w.reduceSlots),
        memoryMb: sum((w) => w.memoryMb),
        diskMBps: sum((w) => w.diskMBps),
      },
    ],
  };
}

// ---- Hadoop SLS node files ---------------------------------------------------------------------

export interface SlsNodesOptions {
  readonly name?: string;
  /** Memory of a node that names no "memory-mb"; default 10240, SLS's yarn.sls.nm.memory.mb. */
  readonly memoryMb?: number;
  /** Cores of a node that names no "vcores"; default 10, SLS's yarn.sls.nm.vcores. */
  readonly vcores?: number;
  /** SLS models no disks; default 100 MB/s, as the presets. */
  readonly diskMBps?: number;
}

/** What a node of an SLS node file gets when it names no resources of its own. */
export const SLS_NODE_DEFAULTS = { memoryMb: 10_240, vcores: 10, diskMBps: 100 } as const;

function slsNodesFromValues(values: readonly unknown[], source: string, options: SlsNodesOptions): ClusterShape {
  const fail = (message: string, details: Record<string, string> = {}): never => {
    throw new MinimrError('EBADCONF', `${source}: ${message}`, details);
  };
  const memoryMb = options.memoryMb ?? SLS_NODE_DEFAULTS.memoryMb;
  const vcores = options.vcores ?? SLS_NODE_DEFAULTS.vcores;
  const diskMBps = options.diskMBps ?? SLS_NODE_DEFAULTS.diskMBps;
  const racks = new Map<string, string>();
  const workers: WorkerShape[] = [];
  values.forEach((value, i) => {
    if (!isJsonObject(value)) return fail(`entry ${i + 1} is not a rack object {"rack": ..., "nodes": [...]}`);
    // SLS prefixes the rack with "/" to make the network location; minimr names racks without it.
    const rack = typeof value.rack === 'string' ? value.rack.replace(/^\/+/, '') : '';
    if (rack === '')
      fail(`rack ${i + 1}: field "rack" must be a non-empty rack name, got ${JSON.stringify(value.rack)}`, {
        field: 'rack',
      });
    if (!Array.isArray(value.nodes))
      fail(`rack "${rack}": field "nodes" must be an array of {"node": ...}`, { rack, field: 'nodes' });
    (value.nodes as unknown[]).forEach((raw, k) => {
      if (!isJsonObject(raw))
        return fail(`rack "${rack}": node ${k + 1} is not an object {"node": ...}`, { rack, field: 'nodes' });
      const id =
        typeof raw.node === 'string' && raw.node !== ''
          ? raw.node
          : fail(
              `rack "${rack}": node ${k + 1}: field "node" must be a non-empty string, got ${JSON.stringify(raw.node)}`,
              { rack, field: 'node' },
            );
      const at = `rack "${rack}": node "${id}"`;
      const elsewhere = racks.get(id);
      if (elsewhere !== undefined)
        fail(`${at} is listed twice (also in rack "${elsewhere}")`, { rack, node: id, field: 'node' });
      racks.set(id, rack);
      const count = (field: string, fallback: number): number => {
        const x = raw[field] ?? fallback;
        return Number.isInteger(x) && (x as number) >= 0
          ? (x as number)
          : fail(`${at}: field "${field}" must be a non-negative integer, got ${JSON.stringify(raw[field])}`, {
              rack,
              node: id,
              field,
            });
      };
      if (raw.labels !== undefined && typeof raw.labels !== 'string')
        fail(`${at}: field "labels" must be a string`, { rack, node: id, field: 'labels' });
      const cores = count('vcores', vcores);
      // YARN containers are neither map nor reduce slots: each core is offered as both, as the
      // yarn-me presets do, and memory is what really limits them.
      workers.push({ id, rack, mapSlots: cores, reduceSlots: cores, memoryMb: count('memory-mb', memoryMb), diskMBps });
    });
  });
  if (workers.length === 0) fail('the node file lists no nodes');
  return { name: options.name ?? source, workers };
}

/**
 * A cluster from a Hadoop SLS node file (the `--nodes` file of slsrun.sh): JSON objects one after
 * another, or an array of them, one per rack: {"rack": "default-rack", "nodes": [{"node": "node1"},
 * ...]}. One worker per node, id the node's name, in the rack named without SLS's leading "/". A
 * node may set "memory-mb" and "vcores" (SLS's per-node resources); otherwise it gets 10240 MB and
 * 10 cores (SLS's defaults, or `options`). Each core is a map slot and a reduce slot; disk rate
 * 100 MB/s. "labels" are accepted and ignored (minimr has no node labels).
 */
export function parseSlsNodes(text: string, options: SlsNodesOptions = {}): ClusterShape {
  const source = options.name ?? 'SLS node file';
  return slsNodesFromValues(parseJsonStream(text, source, 'rack object'), source, options);
}

/**
 * A cluster file in either format, told apart by content: minimr's cluster JSON is one object
 * with "workers"; an SLS node file holds objects with "rack" and "nodes".
 */
export function readClusterFile(
  text: string,
  source: string,
  slsOptions: Omit<SlsNodesOptions, 'name'> = {},
): ClusterShape {
  const values = parseJsonStream(text, source, 'JSON object');
  const first = values[0];
  if (values.length === 1 && isJsonObject(first) && 'workers' in first) return parseClusterJson(first, source);
  if (isJsonObject(first) && ('rack' in first || 'nodes' in first))
    return slsNodesFromValues(values, source, { ...slsOptions, name: source });
  throw new MinimrError(
    'EBADCONF',
    `${source}: expected minimr cluster JSON ({"name": ..., ` +
      `"workers": [{"id", "rack", "mapSlots", "reduceSlots", ` +
      `"memoryMb", "diskMBps"}]}) ` +
      (`or a Hadoop SLS node file ({"rack": ..., "nodes": [{"node": ` +
        `...}]} per rack); found ${describeJsonValues(values)}`),
  );
}

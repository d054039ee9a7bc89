/**
 * Workloads and cluster shapes by name or file, as `minimr sim` and the tests name them: a generator
 * or preset name, or a .json file in any of the formats this folder reads.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { MinimrError } from '../errors.js';
import { clusterPreset, clusterPresetNames, readClusterFile } from './clusters.js';
import { WORKLOAD_NAMES, namedWorkload } from './generators.js';
import { parseSwimTrace, type SwimOptions } from './swim.js';
import { parseDssPenalty, readWorkloadFile } from './traces.js';
import type { ClusterShape, Workload } from './types.js';

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(resolve(path), 'utf8');
  } catch (err) {
    throw new MinimrError('EBADCONF', `cannot read the ${what} ${path}: ${(err as Error).message}`);
  }
}

/** The prefix that names a SWIM TSV file: `swim:FILE` (SWIM's files are not JSON, so not told apart by content). */
export const SWIM_PREFIX = 'swim:';

/**
 * A named workload, a .json file (minimr workload JSON, a Hadoop SLS or a Hadoop Rumen job trace)
 * or `swim:FILE`, a SWIM TSV, read with `swim` and `scale` as its sizeScale unless `swim` has one.
 */
export async function loadWorkload(
  name: string,
  o: {
    seed?: number;
    load?: number;
    scale?: number;
    penalty?: string;
    /** A generated YARN-ME trace's step penalty factor (default 3). */
    penaltyFactor?: number;
    swim?: SwimOptions;
  },
): Promise<Workload> {
  const isSwim = name.startsWith(SWIM_PREFIX);
  if (o.swim !== undefined && !isSwim)
    throw new MinimrError('EBADCONF', `--swim-options applies to swim:FILE workloads, and ${name} is not one`);
  // DSS's command line names the penalty model of task groups that name none; other workloads have none.
  const defaultPenalty = o.penalty !== undefined ? parseDssPenalty(o.penalty) : undefined;
  const notDss = () =>
    new MinimrError('EBADCONF', `--penalty applies to the task groups of a DSS trace, and ${name} is not one`);
  if (o.penaltyFactor !== undefined && !name.startsWith('yarn-me'))
    throw new MinimrError(
      'EBADCONF',
      `a penalty factor applies to the generated YARN-ME traces, and ${name} is not one`,
    );
  if (isSwim) {
    if (defaultPenalty !== undefined) throw notDss();
    const path = name.slice(SWIM_PREFIX.length);
    if (path === '') throw new MinimrError('EBADCONF', 'swim: names no file; give swim:PATH/TO/TRACE.tsv');
    return parseSwimTrace(await readText(path, 'SWIM trace'), {
      name: path,
      ...(o.scale !== undefined ? { sizeScale: o.scale } : {}),
      ...o.swim,
    });
  }
  if ((WORKLOAD_NAMES as readonly string[]).includes(name)) {
    if (defaultPenalty !== undefined) throw notDss();
    return namedWorkload(name, o);
  }
  if (!/\.json$/i.test(name))
    throw new MinimrError(
      'EBADCONF',
      `unknown workload "${name}"; ` +
        `known: ${WORKLOAD_NAMES.join(', ')}, or a .json minimr workload ` +
        `/ Hadoop SLS / Hadoop Rumen trace file, or swim:FILE (a SWIM TSV)`,
    );
  const workload = readWorkloadFile(await readText(name, 'workload file'), name, { defaultPenalty });
  if (defaultPenalty !== undefined && workload.meta?.generator !== 'dss') throw notDss();
  return workload;
}

/**
 * A preset name, or a .json file: minimr's cluster JSON or a Hadoop SLS node file (the paper's
 * simulator's topology file), whose nodes get `sls` memory and cores unless they name their own.
 */
export async function loadCluster(
  name: string,
  sls: { memoryMb?: number; vcores?: number } = {},
): Promise<ClusterShape> {
  if (clusterPresetNames().includes(name)) return clusterPreset(name);
  if (!/\.json$/i.test(name)) return clusterPreset(name);
  return readClusterFile(await readText(name, 'cluster file'), name, sls);
}

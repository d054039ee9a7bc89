import { MinimrError } from '../errors.js';
import { FairPolicy, parseFairOptions } from './fair.js';
import { FawkesPolicy, parseFawkesOptions } from './fawkes.js';
import { FifoPolicy, parseFifoOptions } from './fifo.js';
import { ImprovedFairPolicy, parseImprovedFairOptions } from './improved-fair.js';
import { createTyrexPolicy } from './tyrex.js';
import { SrjfPolicy } from './srjf.js';
import { YarnMePolicy, parseYarnMeOptions, parseYarnOptions } from './yarn-me.js';
import type { Policy } from './types.js';

export type * from './types.js';
export { DEFAULT_FIFO_OPTIONS, FifoPolicy, fifoByCluster, parseFifoOptions, type FifoOptions } from './fifo.js';
export {
  DEFAULT_FAWKES_OPTIONS,
  FawkesPolicy,
  WEIGHTINGS,
  clusterFigures,
  globalDiscrimination,
  metricOf,
  normalizedWeights,
  parseFawkesOptions,
  targetNodes,
  type ClusterFigures,
  type FawkesOptions,
  type Weighting,
} from './fawkes.js';
export { localityOf } from './rooms.js';
export { TyrexPolicy, optimalCutoff, partitionCapacities, squaredCoefficientOfVariation, type TimerSample, type TyrexOptions } from './tyrex.js';
export { validateDecisions } from './validate.js';
export { FREE_POOL, mrClusterProblems } from './mr-cluster-checks.js';
export { DEFAULT_YARN_ME_OPTIONS, DEFAULT_YARN_OPTIONS, YarnMePolicy, parseYarnMeOptions, parseYarnOptions, type YarnMeOptions } from './yarn-me.js';
export { SrjfPolicy, remainingWorkMs } from './srjf.js';
export { FairQueue, Reservations, fairShareBefore, fairShareOrder, memoryInUse, type MemoryByJob } from './yarn.js';
export { Timeline, type TimelineJob, type TimelineNode, type TimelineRelease, type TimelineTasks } from './timeline.js';
export { DEFAULT_DISK_MBPS, bestElasticGrant, elasticDiskMBps, penalizedMs, spilledBytes, type ElasticGrant } from './penalty.js';
export { DEFAULT_MEMORY_STEP_MB, DEFAULT_MIN_MEMORY_FRACTION, grantProblem, memoryStepOf, minimumGrantMb } from './memory.js';
export {
  DEFAULT_FAIR_OPTIONS,
  FairPolicy,
  type FairOptions,
  type FairShares,
  type PerKind,
  type ShareFigures,
  fairShares,
  type ShareClaim,
  type VictimContext,
  mostRecentFirst,
  parseFairOptions,
  waterFill,
} from './fair.js';
export {
  DEFAULT_IMPROVED_FAIR_OPTIONS,
  ImprovedFairPolicy,
  type ImprovedFairOptions,
  type JobCharacter,
  diskRateOf,
  ioBoundCategory,
  ioBoundOn,
  jobCharacter,
  orderCpuBoundVictims,
  orderIoBoundVictims,
  parseImprovedFairOptions,
} from './improved-fair.js';

export type PolicyOptions = Readonly<Record<string, unknown>>;
type PolicyFactory = (options: PolicyOptions) => Policy;

/** Rejects options a policy does not know, so a misspelt setting fails at submission, not silently. */
function noOptions(name: string, options: PolicyOptions): void {
  const unknown = Object.keys(options);
  if (unknown.length > 0) {
    throw new MinimrError('EBADJOB', `scheduler policy '${name}' takes no options, got: ${unknown.join(', ')}`, {
      policy: name,
    });
  }
}

const FACTORIES: ReadonlyMap<string, PolicyFactory> = new Map<string, PolicyFactory>([
  [
    'fifo',
    // Option: nodeLocalDelayMs (0: non-local maps launch at once; Hadoop's and Spark's wait is 3000).
    (options) => new FifoPolicy(parseFifoOptions(options)),
  ],
  // Tyrex with DYNAMICTAGS unless options say `mode: 'static'`; the two named variants fix the mode.
  ['tyrex', (options) => createTyrexPolicy(options)],
  ['tyrex-dynamic', (options) => createTyrexPolicy(options, 'dynamic')],
  ['tyrex-static', (options) => createTyrexPolicy(options, 'static')],
  // Options: nodeLocalDelayMs (3000), rackLocalDelayMs (3000), preemption (true),
  // minShareTimeoutMs (15000), fairShareTimeoutMs (30000).
  ['fair', (options) => new FairPolicy(parseFairOptions(options))],
  // FAIR's options plus minMapsForCharacter (3) and placePrivateData (true).
  ['improved-fair', (options) => new ImprovedFairPolicy(parseImprovedFairOptions(options))],
  // Options: weighting ('td'; none, eq, jd, dd, td, pu, du, ru, js, jt, tt), intervalMs (60000),
  // sampleMs (5000), tau (0.001), grow ('TC' or 'TR'), shrink ('DP' or 'IP'), psi (0.5),
  // throughputBase (2), deactivateIdle (true).
  ['fawkes', (options) => new FawkesPolicy(parseFawkesOptions(options))],
  // YARN's regular allocation with reservations, fair queue order. Options: backfillReserved (false).
  ['yarn', (options) => new YarnMePolicy(parseYarnOptions(options))],
  // YARN-ME: elastic allocations. Options: backfillReserved (true), diskShare (0.5).
  ['yarn-me', (options) => new YarnMePolicy(parseYarnMeOptions(options))],
  // Shortest remaining job first at ideal memory: the meganode bound's scheduler (workloads/clusters.ts meganode).
  [
    'srjf',
    (options) => {
      noOptions('srjf', options);
      return new SrjfPolicy();
    },
  ],
]);

/** Names `createPolicy` accepts, in registration order. */
export function policyNames(): readonly string[] {
  return [...FACTORIES.keys()];
}

/** A fresh policy object: policies may keep state between calls, so instances are never shared. */
export function createPolicy(name: string, options: PolicyOptions = {}): Policy {
  const factory = FACTORIES.get(name);
  if (!factory) {
    throw new MinimrError('EBADJOB', `unknown scheduler policy '${name}'; known policies: ${policyNames().join(', ')}`, {
      policy: name,
    });
  }
  return factory(options);
}
export { parsePools } from './pools.js';

import { MinimrError } from '../errors.js';
import { FAIR_DEFINITION } from './fair.js';
import { FAWKES_DEFINITION } from './fawkes.js';
import { FIFO_DEFINITION } from './fifo.js';
import { IMPROVED_FAIR_DEFINITION } from './improved-fair.js';
import { allowedValues, type PolicyDefinition, type PolicyEngine, type PolicyOptions } from './options.js';
import { SRJF_DEFINITION } from './srjf.js';
import { TYREX_DEFINITIONS } from './tyrex.js';
import { YARN_DEFINITION, YARN_ME_DEFINITION } from './yarn-me.js';
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
export {
  DEFAULT_TYREX_OPTIONS,
  TyrexPolicy,
  optimalCutoff,
  parseTyrexOptions,
  partitionCapacities,
  squaredCoefficientOfVariation,
  type TimerSample,
  type TyrexOptions,
  type TyrexSettings,
} from './tyrex.js';
export type {
  NumberRange,
  OptionSpec,
  OptionSpecs,
  OptionValue,
  PolicyDefinition,
  PolicyEngine,
  PolicyOptions,
} from './options.js';
export { allowedValues, definePolicy, optionError, parseOptions } from './options.js';
export {
  CONFORMANCE_RULES,
  checkConformance,
  askPolicy,
  conformanceLines,
  conformanceScenarios,
  malformedDecision,
  policyFaultText,
  withClockRecorder,
  type PolicyAnswer,
  type PolicyFault,
  type ConformanceReport,
  type ConformanceRule,
  type ConformanceScenario,
  type ConformanceViolation,
} from './conformance.js';
export { validateDecisions } from './validate.js';
export { FREE_POOL, mrClusterProblems } from './mr-cluster-checks.js';
export {
  DEFAULT_YARN_ME_OPTIONS,
  DEFAULT_YARN_OPTIONS,
  DSS_COMPAT,
  YarnMePolicy,
  parseYarnMeOptions,
  parseYarnOptions,
  type YarnMeOptions,
} from './yarn-me.js';
export { SrjfPolicy, remainingWorkMs } from './srjf.js';
export { FairQueue, Reservations, fairShareBefore, fairShareOrder, memoryInUse, type MemoryByJob } from './yarn.js';
export {
  PEEK_AM_POLL_MS,
  peekCompletions,
  peekCutoffMs,
  type PeekContainer,
  type PeekInput,
  type PeekJob,
  type PeekNode,
  type PeekTasks,
} from './peek.js';
export { NodeHoldings, holdingOf, type Holding } from './holdings.js';
export {
  Timeline,
  runningInOrder,
  type RunningReleases,
  type TimelineJob,
  type TimelineNode,
  type TimelineRelease,
  type TimelineTasks,
} from './timeline.js';
export {
  DEFAULT_DISK_MBPS,
  bestElasticGrant,
  elasticDiskMBps,
  penalizedMs,
  spilledBytes,
  type ElasticGrant,
} from './penalty.js';
export {
  DEFAULT_MEMORY_STEP_MB,
  DEFAULT_MIN_MEMORY_FRACTION,
  grantProblem,
  memoryStepOf,
  minimumGrantMb,
} from './memory.js';
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

/**
 * Every policy `createPolicy` knows, in the order the help text lists them. Each module declares its
 * own (name, summary, options with defaults, constructor): adding a policy is adding its definition here.
 */
const DEFINITIONS: readonly PolicyDefinition[] = [
  FIFO_DEFINITION,
  ...TYREX_DEFINITIONS,
  FAIR_DEFINITION,
  IMPROVED_FAIR_DEFINITION,
  FAWKES_DEFINITION,
  YARN_DEFINITION,
  YARN_ME_DEFINITION,
  SRJF_DEFINITION,
];

const BY_NAME: ReadonlyMap<string, PolicyDefinition> = new Map(DEFINITIONS.map((d) => [d.name, d]));

/** The registered policies' definitions, in registration order. */
export function policyDefinitions(): readonly PolicyDefinition[] {
  return DEFINITIONS;
}

/** Names `createPolicy` accepts, in registration order. */
export function policyNames(): readonly string[] {
  return DEFINITIONS.map((d) => d.name);
}

/**
 * Whether `--policy NAME` names a plug-in file rather than a built-in: a path (it holds '/') or a
 * JavaScript or TypeScript file name. Such a name is registered by its loader (`registerPolicyPlugin`)
 * before `createPolicy` can make it.
 */
export function isPolicyFileName(name: string): boolean {
  return name.includes('/') || name.includes('\\') || /\.[cm]?[jt]s$/.test(name);
}

/** Plug-in definitions by the name they were given as (`./drf.ts`): the same name creates them. */
const PLUGINS = new Map<string, PolicyDefinition>();

/**
 * Makes `createPolicy(name)` create policies from `definition`: a plug-in loaded from the file `name`
 * names (the CLI's loader does this before any run starts). Registering a name again replaces it.
 */
export function registerPolicyPlugin(name: string, definition: PolicyDefinition): void {
  PLUGINS.set(name, definition);
}

/** The definition `createPolicy(name)` uses: a built-in or a registered plug-in; EBADCONF for neither. */
export function policyDefinition(name: string): PolicyDefinition {
  const definition = BY_NAME.get(name) ?? PLUGINS.get(name);
  if (definition) return definition;
  if (isPolicyFileName(name))
    throw new MinimrError(
      'EBADCONF',
      `policy plug-in ${name} is not loaded: load it (loadPolicyPlugins) before a policy is created from it`,
      { policy: name },
    );
  throw new MinimrError(
    'EBADCONF',
    `unknown scheduler policy '${name}'; known policies: ${policyNames().join(', ')} ` +
      '(or a plug-in file: ./my-policy.js or .ts)',
    { policy: name },
  );
}

/**
 * A fresh policy object: policies may keep state between calls, so instances are never shared. An
 * unknown name, or an option the policy does not take or allow, is EBADCONF. On the 'cluster' engine
 * (the JobTracker) the definition's `clusterDefaults` apply under the options given.
 */
export function createPolicy(name: string, options: PolicyOptions = {}, engine: PolicyEngine = 'simulator'): Policy {
  const definition = policyDefinition(name);
  const policy: unknown = definition.create(
    engine === 'cluster' ? { ...definition.clusterDefaults, ...options } : options,
  );
  if (typeof policy !== 'object' || policy === null || typeof (policy as Policy).schedule !== 'function')
    throw new MinimrError('EBADCONF', `policy ${name}: create() returned no policy with a schedule(snapshot) method`, {
      policy: name,
    });
  return policy as Policy;
}

/**
 * Every policy name and its options checked at once, before any run starts: each is created once
 * (and dropped), so a misspelt name or option is EBADCONF now rather than after a long baseline run.
 */
export function checkPolicies(
  names: readonly string[],
  optionsOf: (name: string) => PolicyOptions = () => ({}),
  engine: PolicyEngine = 'simulator',
): void {
  for (const name of names) createPolicy(name, optionsOf(name), engine);
}

const HELP_WIDTH = 100;

/**
 * `text` in lines of at most HELP_WIDTH characters (a longer word stands alone), the first indented by `first`, the
 * rest by `rest`.
 */
function wrapped(text: string, first: string, rest: string): string[] {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(' ')) {
    const indent = lines.length === 0 ? first : rest;
    if (line.length > indent.length && line.length + 1 + word.length > HELP_WIDTH) {
      lines.push(line);
      line = rest + word;
    } else line += (line.length > indent.length ? ' ' : '') + word;
  }
  lines.push(line);
  return lines;
}

/**
 * Every registered policy with its summary and its options, each as `NAME = DEFAULT: allowed values;
 * what it does` (DEFAULT as JSON, as `--policy-options` takes it), written from the definitions.
 */
export function policyHelp(): string {
  const out = ['Scheduler policies (--policy NAME) and their options (--policy-options JSON), each as NAME = DEFAULT:'];
  for (const definition of DEFINITIONS) {
    out.push('', ...wrapped(`${definition.name}: ${definition.summary}`, '', '    '));
    const names = Object.keys(definition.options);
    if (names.length === 0) out.push('  (no options)');
    for (const name of names) {
      const spec = definition.options[name]!;
      const value = definition.defaults[name];
      const head = value === undefined ? `${name} (no default)` : `${name} = ${JSON.stringify(value)}`;
      const onCluster = definition.clusterDefaults?.[name];
      const cluster = onCluster === undefined ? '' : `; default on a real cluster: ${JSON.stringify(onCluster)}`;
      out.push(...wrapped(`${head}: ${allowedValues(spec)}; ${spec.about}${cluster}`, '  ', '      '));
    }
  }
  return out.join('\n');
}
export { parsePools } from './pools.js';

/**
 * Experiments: policy comparisons in the simulator (and `minimr sim`, which runs them), a
 * workload run on a real local cluster, and `minimr bench policies`. A folder of its own because
 * it joins the two halves of the project: it reads workloads and cluster shapes from
 * src/workloads, runs them in src/sim and on clusters started from src/runtime, so none of those
 * has to know about the others. The CLI and the benchmarks import it from here.
 */
export { runWorkloadOnCluster } from './workload-runner.js';
export {
  comparePolicies,
  runtimesAlone,
  writeComparison,
  type CompareOptions,
  type ComparisonResult,
  type PolicyFactory,
  type PolicyResult,
} from './compare.js';
export {
  DSS_NODE_HEARTBEAT_MS,
  runSimCommand,
  simPolicyOptions,
  traceHostsNotIn,
  type SimCommandArgs,
} from './sim-command.js';
export { benchPolicies, realCluster, scaleWorkload } from './bench-policies.js';
export type { RealJobRun } from './workload-runner.js';
export {
  DEFAULT_MIX,
  runYarnMeReal,
  yarnMeRealJson,
  yarnMeRealMarkdown,
  yarnMeRealSvgs,
  withBaselineTaskTimes,
  type MixJob,
  type YarnMeRealOptions,
  type YarnMeRealResult,
} from './yarn-me-real.js';
export {
  checkSweepSpec,
  sweepPolicies,
  finishedUnits,
  runSweepUnit,
  summarise,
  sweepTable,
  sweepUnits,
  type SweepComparison,
  type SweepResult,
  type SweepSpec,
  type SweepUnit,
} from './sweep.js';
export {
  runSweep,
  runSweepOnCluster,
  type SweepClusterClient,
  type SweepRun,
  type SweepRunOptions,
} from './sweep-runner.js';

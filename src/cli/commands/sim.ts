/** `minimr sim`: a workload on a simulated cluster under one or more policies. */
import { runSimCommand } from '../../experiments/index.js';
import { parseSwimOptions } from '../../workloads/index.js';
import { defineCommand, policySettings } from '../options.js';

export const simCommand = defineCommand({
  command: 'sim',
  describe: 'simulate a workload on a simulated cluster under one or more policies (discrete-event, deterministic)',
  builder: (y) =>
    y
      .option('workload', {
        type: 'string',
        demandOption: true,
        describe:
          'hvw|mvw|lvw|wkld-a..e|yarn-me-uniform|yarn-me-exp|improved-fair, ' +
          'or a .json minimr workload, Hadoop SLS job trace or Hadoop ' +
          'Rumen job trace, or swim:FILE (a SWIM TSV)',
      })
      .option('cluster', {
        type: 'string',
        describe:
          'preset (tyrex-20, improved-fair-12, fawkes-60, fawkes-48, ' +
          'yarn-me-50, yarn-me-100, yarn-me-3000), or a .json minimr ' +
          "cluster file or Hadoop SLS node file; default: the workload's",
      })
      .option('policy', {
        type: 'string',
        array: true,
        default: ['fifo'],
        describe: 'policy name or plug-in file (./my-policy.ts); repeat to compare',
      })
      .option('policy-options', { type: 'string', describe: 'policy settings as a JSON object' })
      .option('reference', {
        type: 'string',
        describe: "the policy whose jobs' durations the others' per-job agreement compares with (default: the first)",
      })
      .option('seed', { type: 'number', default: 1 })
      .option('load', { type: 'number', describe: 'offered load for the Tyrex workloads (default 0.7)' })
      .option('scale', {
        type: 'number',
        describe: 'workload scale (jobs or sizes, per generator; swim: every byte count)',
      })
      .option('swim-options', {
        type: 'string',
        describe:
          'swim:FILE: JSON object of timeScale, sizeScale, blockBytes, bytesPerReduce, mapMBps, reduceMBps, ' +
          'taskStartMs, memoryMb',
      })
      .option('heartbeat-ms', { type: 'number', describe: 'default: max(3 s, workers / 100 s)' })
      .option('noise', { type: 'number', describe: 'duration mis-estimation, e.g. 0.15 for +-15%' })
      .option('memory-noise', {
        type: 'number',
        describe: 'ideal memory mis-estimation (YARN-ME), e.g. 0.15 for +-15%',
      })
      .option('penalty-noise', { type: 'number', describe: 'penalty mis-estimation (YARN-ME), e.g. 0.15 for +-15%' })
      .option('penalty', {
        type: 'string',
        describe:
          "a DSS trace's penalty model for task groups that name none, as DSS's command line: " +
          'MODEL[:FACTOR], e.g. step:3 (null, step, power1, power2, sqrt)',
      })
      .option('node-memory-mb', {
        type: 'number',
        describe: "memory of an SLS/DSS topology file's nodes (default 10240)",
      })
      .option('node-cores', { type: 'number', describe: "cores of an SLS/DSS topology file's nodes (default 10)" })
      .option('meganode', {
        type: 'boolean',
        describe: "pool the cluster into one node (YARN-ME's meganode bound, with --policy srjf)",
      })
      .option('reduce-slow-start', {
        type: 'number',
        describe: "fraction of a job's maps done before its reduces launch (Hadoop 1: 0.05); default 1, as minimr runs",
      })
      .option('speculation', {
        type: 'boolean',
        describe:
          "speculative execution (Hadoop's LATE: backups of slow attempts on fast workers, at most 10% of slots); " +
          "off by default in the simulator, as in the papers' simulations; on by default on a real cluster",
      })
      .option('compat', {
        type: 'string',
        choices: ['dss'],
        describe:
          "yarn and yarn-me allocate as DSS, the YARN-ME paper's simulator (ApplicationMasters, one container " +
          'per 1 s node heartbeat, launch through AM heartbeats, no backfill, unguarded reservations, PEEK admission)',
      })
      .option('am-mb', {
        type: 'number',
        describe: "yarn/yarn-me: each job's ApplicationMaster container, MB (default 1000; 0: none)",
      })
      .option('am-cores', { type: 'number', describe: "yarn/yarn-me: each ApplicationMaster's cores (default 1)" })
      .option('out', {
        type: 'string',
        describe: 'directory for results.json, results.md and SVG plots (each with its data as CSV beside it)',
      })
      .option('log-scale', { type: 'boolean', describe: "the slowdown CDF's x axis in log scale" }),
  handler: async (argv) => {
    const { policyOptions } = await policySettings(argv);
    const swim = argv['swim-options'] !== undefined ? parseSwimOptions(argv['swim-options']) : undefined;
    const { table, files } = await runSimCommand(
      {
        workload: argv.workload,
        cluster: argv.cluster,
        policies: argv.policy.map(String),
        policyOptions,
        reference: argv.reference,
        seed: argv.seed,
        load: argv.load,
        scale: argv.scale,
        ...(swim !== undefined ? { swim } : {}),
        heartbeatMs: argv['heartbeat-ms'],
        noise: argv.noise,
        memoryNoise: argv['memory-noise'],
        penaltyNoise: argv['penalty-noise'],
        penalty: argv.penalty,
        nodeMemoryMb: argv['node-memory-mb'],
        nodeCores: argv['node-cores'],
        meganode: argv.meganode,
        reduceSlowStart: argv['reduce-slow-start'],
        speculation: argv.speculation,
        ...(argv.compat === 'dss' ? { compat: 'dss' as const } : {}),
        amMb: argv['am-mb'],
        amCores: argv['am-cores'],
        out: argv.out,
        ...(argv['log-scale'] ? { logScale: true } : {}),
      },
      (line) => process.stderr.write(`${line}\n`),
    );
    process.stdout.write(table);
    for (const f of files) process.stderr.write(`wrote ${f}\n`);
  },
});

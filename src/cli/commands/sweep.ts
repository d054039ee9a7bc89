/** `minimr sweep`: many simulations on every core, results as JSON lines, resumable (src/experiments/sweep.ts). */
import { resolve } from 'node:path';
import { MinimrError } from '../../errors.js';
import {
  checkSweepSpec,
  sweepPolicies,
  runSweep,
  runSweepOnCluster,
  summarise,
  sweepTable,
  type SweepSpec,
} from '../../experiments/index.js';
import { withClient } from '../client.js';
import { isPolicyFileName, type PolicyOptions } from '../../scheduler/index.js';
import { defineCommand } from '../options.js';

/** `--seeds 1-200` or `--seeds 200` (1..200) or `--seeds 3,7,9`. */
export function parseSeeds(text: string): number[] {
  const range = /^(\d+)-(\d+)$/.exec(text);
  const seeds = range
    ? Array.from({ length: Math.max(0, Number(range[2]) - Number(range[1]) + 1) }, (_, i) => Number(range[1]) + i)
    : /^\d+$/.test(text)
      ? Array.from({ length: Number(text) }, (_, i) => i + 1)
      : text.split(',').map((s) => (/^\d+$/.test(s.trim()) ? Number(s.trim()) : Number.NaN));
  if (seeds.length === 0 || seeds.some((s) => !Number.isSafeInteger(s)))
    throw new MinimrError('EUSAGE', `--seeds ${text}: give N (1..N), A-B or a list A,B,C of whole numbers`);
  return seeds;
}

export const sweepCommand = defineCommand({
  command: 'sweep',
  describe:
    'run many simulations (every --workload x --seeds x --policy) on every core; each result is appended to ' +
    '--out as a JSON line, and a sweep run again with the same --out resumes where it stopped',
  builder: (y) =>
    y
      .option('workload', {
        type: 'string',
        array: true,
        demandOption: true,
        describe: 'a workload as `minimr sim` takes it (repeat to sweep several)',
      })
      .option('seeds', { type: 'string', default: '10', describe: 'N (seeds 1..N), A-B, or A,B,C' })
      .option('policy', {
        type: 'string',
        array: true,
        demandOption: true,
        describe: 'policy name or plug-in file (./my-policy.ts; not with --cluster); repeat',
      })
      .option('policy-options', { type: 'string', describe: 'a JSON object of options per policy name' })
      .option('baseline', { type: 'string', describe: 'the policy the others are compared with (default: the first)' })
      .option('meganode', {
        type: 'string',
        describe: "also run this policy on the cluster pooled into one node (YARN-ME's meganode bound: srjf)",
      })
      .option('sim-cluster', {
        type: 'string',
        describe: "the simulated cluster: a preset or file, as `minimr sim --cluster` (default: each workload's own)",
      })
      .option('cluster', {
        type: 'string',
        describe:
          'run the sweep as a map-only job on this minimr cluster (ws:// or wss:// URL of its JobTracker) ' +
          'instead of on this machine',
      })
      .option('maps', { type: 'number', default: 20, describe: 'maps of a sweep on a cluster' })
      .option('penalty', { type: 'number', describe: "the YARN-ME traces' step penalty factor (default 3)" })
      .option('compat', {
        type: 'string',
        choices: ['dss'],
        describe:
          "yarn and yarn-me allocate as DSS, the YARN-ME paper's simulator, with its 1 s node heartbeat " +
          '(as minimr sim --compat dss): the setting to compare with the paper',
      })
      .option('threads', { type: 'number', describe: 'worker threads (default: every core)' })
      .option('out', { type: 'string', demandOption: true, describe: 'the results file (JSON lines)' }),
  handler: async (argv) => {
    let policyOptions: Record<string, PolicyOptions> = {};
    if (argv['policy-options'] !== undefined) {
      try {
        policyOptions = JSON.parse(argv['policy-options']) as Record<string, PolicyOptions>;
      } catch (err) {
        throw new MinimrError('EBADCONF', `--policy-options is not valid JSON: ${(err as Error).message}`);
      }
    }
    const spec: SweepSpec = {
      workloads: argv.workload.map(String),
      seeds: parseSeeds(argv.seeds),
      policies: argv.policy.map(String),
      policyOptions,
      ...(argv['sim-cluster'] !== undefined ? { cluster: argv['sim-cluster'] } : {}),
      ...(argv.meganode !== undefined ? { meganodePolicy: argv.meganode } : {}),
      ...(argv.penalty !== undefined ? { penalty: argv.penalty } : {}),
      ...(argv.compat === 'dss' ? { compat: 'dss' as const } : {}),
    };
    await checkSweepSpec(spec);
    if (argv.threads !== undefined && !(Number.isInteger(argv.threads) && argv.threads > 0))
      throw new MinimrError('EUSAGE', `--threads ${argv.threads}: give a positive whole number`);
    if (argv.cluster !== undefined) {
      if (!/^wss?:\/\//.test(argv.cluster))
        throw new MinimrError('EUSAGE', `--cluster ${argv.cluster}: give the JobTracker's ws:// or wss:// URL`);
      const plugins = sweepPolicies(spec).filter(isPolicyFileName);
      if (plugins.length > 0)
        throw new MinimrError(
          'EUSAGE',
          `--cluster with policy plug-ins (${plugins.join(', ')}): a sweep on a cluster runs built-in policies only; ` +
            'run it here without --cluster',
        );
      if (!(Number.isInteger(argv.maps) && argv.maps > 0))
        throw new MinimrError('EUSAGE', `--maps ${argv.maps}: give a positive whole number`);
      const run = await withClient({ ...argv, jobtracker: argv.cluster }, (client) =>
        runSweepOnCluster(spec, { out: resolve(argv.out), client, maps: argv.maps }),
      );
      process.stderr.write(
        `${run.ran} units run by job ${run.jobId ?? '(none)'}, ${run.skipped} already in ${argv.out}, ` +
          `${run.wallS.toFixed(1)} s wall\n`,
      );
      process.stdout.write(`${sweepTable(summarise(run.results, argv.baseline ?? spec.policies[0]!))}\n`);
      return;
    }
    const stop = new AbortController();
    const onSignal = (): void => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    let said = 0;
    const run = await runSweep(spec, {
      out: resolve(argv.out),
      ...(argv.threads !== undefined ? { threads: argv.threads } : {}),
      signal: stop.signal,
      onProgress: (done, total, r) => {
        if (Date.now() - said < 2000 && done < total) return;
        said = Date.now();
        process.stderr.write(`${done}/${total} units (last: ${r.key}, ${r.wallS.toFixed(2)} s)\n`);
      },
    }).finally(() => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    });
    process.stderr.write(
      `${run.ran} units run, ${run.skipped} already in ${argv.out}, ${run.wallS.toFixed(1)} s wall` +
        `${run.stopped ? '; stopped: run the same command again to resume' : ''}\n`,
    );
    if (!run.stopped)
      process.stdout.write(`${sweepTable(summarise(run.results, argv.baseline ?? spec.policies[0]!))}\n`);
  },
});

/** `minimr bench policies`: one workload under several policies, simulated and on a real local cluster. */
import { readFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { MinimrError } from '../../errors.js';
import { benchPolicies } from '../../experiments/index.js';
import type { PolicyOptions } from '../../scheduler/index.js';
import { parseSize } from '../../util/index.js';
import { parseSwimOptions } from '../../workloads/index.js';
import { defineGroup } from '../options.js';

export const benchCommand = defineGroup({
  command: 'bench',
  describe: 'benchmarks: policies',
  builder: (y) =>
    y
      .command(
        'policies',
        'run one workload under several policies, in the simulator and (--real) on a local cluster, and compare them',
        (yy) =>
          yy
            .option('workload', {
              type: 'string',
              demandOption: true,
              describe:
                'hvw | mvw | lvw | wkld-a..e | yarn-me-uniform | yarn-me-exp | ' +
                'improved-fair | a minimr workload / Hadoop SLS / Hadoop Rumen ' +
                'JSON file | swim:FILE (a SWIM TSV)',
            })
            .option('policies', {
              type: 'string',
              default: 'fifo,fair',
              describe: 'comma-separated policy names or plug-in files (./my-policy.ts)',
            })
            .option('cluster', {
              type: 'string',
              describe:
                'simulated cluster: a preset, or a minimr cluster / Hadoop SLS ' +
                "node JSON file (default: the workload's)",
            })
            .option('policy-options', { type: 'string', describe: 'JSON object: policy name -> its options' })
            .option('real-policy-options', {
              type: 'string',
              describe: 'the same for the real run (e.g. timeouts scaled down); default --policy-options',
            })
            .option('seed', { type: 'number' })
            .option('load', { type: 'number' })
            .option('scale', { type: 'number', describe: 'workload scale (swim: every byte count)' })
            .option('swim-options', {
              type: 'string',
              describe: 'swim:FILE: JSON object of timeScale, sizeScale, blockBytes, bytesPerReduce, mapMBps, ...',
            })
            .option('sim', { type: 'boolean', default: true, describe: 'run the simulator (--no-sim to skip)' })
            .option('real', {
              type: 'boolean',
              default: false,
              describe: 'also run on a real local cluster, scaled down',
            })
            .option('real-workers', { type: 'number', default: 6 })
            .option('real-racks', { type: 'number', default: 3 })
            .option('real-map-slots', { type: 'number', default: 2 })
            .option('real-reduce-slots', { type: 'number', default: 1 })
            .option('real-memory-mb', { type: 'number', default: 2048 })
            .option('real-disk-mbps', {
              type: 'number',
              default: 20,
              describe: 'disk rate the real workers report (scaled with the data)',
            })
            .option('bytes-per-map', { type: 'string', default: '1m' })
            .option('time-scale', {
              type: 'number',
              default: 0.05,
              describe: 'real ms per workload ms, for arrival times',
            })
            .option('max-maps-per-job', { type: 'number', default: 48 })
            .option('out', { type: 'string', default: 'bench-results/policies' })
            .option('dir', {
              type: 'string',
              default: '.minimr/bench-policies',
              describe: 'data directory of the real clusters',
            }),
        async (argv) => {
          const parseJson = (flag: string, text: string | undefined): Record<string, PolicyOptions> | undefined => {
            if (text === undefined) return undefined;
            try {
              const v: unknown = JSON.parse(text);
              if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
              return v as Record<string, PolicyOptions>;
            } catch (err) {
              throw new MinimrError(
                'EBADCONF',
                `${flag} must be a JSON object of policy name -> options: ${(err as Error).message}`,
              );
            }
          };
          const policyOptions = parseJson('--policy-options', argv['policy-options']);
          const realPolicyOptions = parseJson('--real-policy-options', argv['real-policy-options']);
          const result = await benchPolicies({
            workload: argv.workload,
            ...(argv.cluster !== undefined ? { cluster: argv.cluster } : {}),
            policies: argv.policies
              .split(',')
              .map((p) => p.trim())
              .filter(Boolean),
            ...(policyOptions ? { policyOptions } : {}),
            ...(realPolicyOptions ? { realPolicyOptions } : {}),
            ...(argv.seed !== undefined ? { seed: argv.seed } : {}),
            ...(argv.load !== undefined ? { load: argv.load } : {}),
            ...(argv.scale !== undefined ? { scale: argv.scale } : {}),
            ...(argv['swim-options'] !== undefined ? { swim: parseSwimOptions(argv['swim-options']) } : {}),
            sim: argv.sim,
            ...(argv.real
              ? {
                  real: {
                    workers: argv['real-workers'],
                    racks: argv['real-racks'],
                    mapSlots: argv['real-map-slots'],
                    reduceSlots: argv['real-reduce-slots'],
                    memoryMb: argv['real-memory-mb'],
                    diskMBps: argv['real-disk-mbps'],
                    bytesPerMap: parseSize(argv['bytes-per-map']),
                    timeScale: argv['time-scale'],
                    maxMapsPerJob: argv['max-maps-per-job'],
                  },
                }
              : {}),
            out: resolvePath(argv.out),
            dataDir: resolvePath(argv.dir),
            progress: (line) => process.stderr.write(`${line}\n`),
          });
          process.stdout.write(
            `${await readFile(result.files[result.files.length - 1]!, 'utf8')}\nwritten: ${result.files.join(', ')}\n`,
          );
        },
      )
      .demandCommand(1),
});

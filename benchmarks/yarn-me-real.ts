/**
 * YARN-ME on a real local cluster (issue 14, the real part of bench:yarn-me): a mix of TeraSort,
 * WordCount and GrepCount jobs under `yarn` and `yarn-me` on 4 workers whose memory is a little
 * under two map tasks' ideal, interleaved pairs of runs, the simulator's prediction of the same
 * workload beside them (see src/experiments/yarn-me-real.ts for how a run is prepared and checked).
 * Target: yarn-me cuts the mix's average JCT by >= 20%; the predicted gain within 10 points.
 *
 * Run: npm run bench:yarn-me-real [-- --repeats 5 --bytes-per-map 8m --cpu-throttle 4 --policies yarn,yarn-me]
 * (`--calibration bench-results/yarn-me-real/yarn-me-real.json` reuses that run's calibrated profiles.)
 * Writes bench-results/yarn-me-real/{yarn-me-real.json,yarn-me-real.md,yarn-me-real-*.svg}.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { runYarnMeReal, yarnMeRealJson, yarnMeRealMarkdown, yarnMeRealSvgs } from '../src/experiments/index.js';
import type { JobProfile } from '../src/runtime/index.js';
import { parseSize } from '../src/util/index.js';

const SELF = fileURLToPath(import.meta.url);
const T0 = Date.now();
const log = (m: string) => process.stderr.write(`[${((Date.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${m}\n`);

const args = yargs(process.argv.slice(2))
  .option('repeats', { type: 'number', default: 3, describe: 'pairs of runs (one per policy, order alternating)' })
  .option('policies', { type: 'string', default: 'yarn,yarn-me', describe: 'the baseline and the elastic policy' })
  .option('bytes-per-map', { type: 'string', default: '8m' })
  .option('cpu-throttle', {
    type: 'number',
    default: 8,
    describe:
      "every worker's --cpu-throttle on the 'cpu' basis (each worker " +
      'as if on a core of its own, F times slower): at F >= busy tasks ' +
      "/ this machine's cores they do not share its cores",
  })
  .option('memory-factor', {
    type: 'number',
    default: 1.8,
    describe: "worker memory as a multiple of the largest map's ideal memory",
  })
  .option('memory-step-mb', { type: 'number', default: 10 })
  .option('calibration', {
    type: 'string',
    describe: 'a yarn-me-real.json of an earlier run: reuse its calibrated profiles, skip the two calibration runs',
  })
  .option('out', { type: 'string', default: resolve(dirname(SELF), '..', '..', 'bench-results', 'yarn-me-real') })
  .strict()
  .parseSync();

async function main(): Promise<void> {
  const policies = args.policies.split(',');
  if (policies.length !== 2) throw new Error(`--policies takes two policies, the baseline first, got ${args.policies}`);
  const calibratedProfiles = args.calibration
    ? (JSON.parse(await readFile(args.calibration, 'utf8')) as { profiles: JobProfile[] }).profiles
    : undefined;
  const dataDir = await mkdtemp(join(os.tmpdir(), 'minimr-bench-yarn-me-real-'));
  log(
    `load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} on ${os.cpus().length} cores`,
  );
  try {
    const result = await runYarnMeReal({
      dataDir,
      repeats: args.repeats,
      policies: [policies[0]!, policies[1]!],
      bytesPerMap: parseSize(args['bytes-per-map']),
      cpuThrottle: args['cpu-throttle'],
      memoryFactor: args['memory-factor'],
      memoryStepMb: args['memory-step-mb'],
      ...(calibratedProfiles ? { calibratedProfiles } : {}),
      onProgress: log,
    });
    await mkdir(args.out, { recursive: true });
    const markdown = `# bench:yarn-me-real\n\nLoad average at the end: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} on ${os.cpus().length} cores.\n\n${yarnMeRealMarkdown(result)}\n`;
    await writeFile(join(args.out, 'yarn-me-real.md'), markdown);
    await writeFile(join(args.out, 'yarn-me-real.json'), JSON.stringify(yarnMeRealJson(result), null, 2));
    for (const [name, svg] of Object.entries(yarnMeRealSvgs(result))) await writeFile(join(args.out, name), svg);
    process.stdout.write(markdown);
    log(`wrote ${args.out}/yarn-me-real.{md,json} and SVG plots`);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:yarn-me-real failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});

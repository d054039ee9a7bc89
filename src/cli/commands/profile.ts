/** `minimr profile`: a job's elasticity profile, measured on a running cluster. */
import { mkdir, writeFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { MinimrError } from '../../errors.js';
import { parseConfPairs, profileChart, profileJob, profileMarkdown, type JobClient } from '../../runtime/index.js';
import { lineChartFiles } from '../../util/index.js';
import { withClient } from '../client.js';
import { defineCommand, jobtrackerOption, parseParams } from '../options.js';

export const profileCommand = defineCommand({
  command: 'profile <module>',
  describe:
    'elasticity profile: one map and one reduce at ideal memory and ' +
    'at fractions of it; fits T(m) = T + spilled(m)/diskRate',
  builder: (y) =>
    jobtrackerOption(y.positional('module', { type: 'string', demandOption: true }))
      .option('input', { type: 'string', array: true, alias: 'i', demandOption: true })
      .option('param', { type: 'string', array: true, alias: 'p' })
      .option('conf', { type: 'string', array: true, alias: 'c' })
      .option('fractions', { type: 'string', default: '1,0.75,0.5,0.25,0.1', describe: 'memory fractions of ideal' })
      .option('maps', { type: 'number', default: 1, describe: 'map tasks per run (their output is the reducer input)' })
      .option('out', {
        type: 'string',
        default: 'bench-results',
        describe: 'local directory for profile-<job>.{json,md,svg}',
      }),
  handler: async (argv) => {
    const fractions = argv.fractions.split(',').map(Number);
    if (fractions.some((f) => !(f > 0 && f <= 1)))
      throw new MinimrError('EBADJOB', `--fractions must be numbers in (0, 1], got ${argv.fractions}`);
    const profile = async (client: JobClient) => {
      const result = await profileJob(client, {
        modulePath: resolvePath(argv.module),
        input: argv.input,
        workDir: `/tmp/minimr-profile-${process.pid}`,
        params: parseParams(argv.param),
        conf: parseConfPairs(argv.conf),
        fractions,
        maps: argv.maps,
        onProgress: (m) => process.stderr.write(`profile: ${m}\n`),
      });
      const base = resolvePath(argv.out, `profile-${result.job.replace(/\.[cm]?[jt]s$/, '')}`);
      await mkdir(resolvePath(argv.out), { recursive: true });
      await writeFile(`${base}.json`, JSON.stringify(result, null, 2));
      await writeFile(`${base}.md`, `${profileMarkdown(result)}\n`);
      for (const [name, text] of lineChartFiles(base, profileChart(result))) await writeFile(name, text);
      process.stdout.write(`${profileMarkdown(result)}\n\nwrote ${base}.{json,md,svg,csv}\n`);
    };
    await withClient(argv, profile);
  },
});

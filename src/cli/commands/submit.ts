/** `minimr submit`: a job module submitted to a cluster, and followed until it ends. */
import { resolve as resolvePath } from 'node:path';
import { parseConfPairs } from '../../runtime/index.js';
import { withClient } from '../client.js';
import { followJob } from '../job-output.js';
import { defineCommand, jobtrackerOption, parseParams } from '../options.js';

export const submitCommand = defineCommand({
  command: 'submit <module>',
  describe: 'submit a job module (.js or .ts) and follow it',
  builder: (y) =>
    jobtrackerOption(y.positional('module', { type: 'string', demandOption: true }))
      .option('input', { type: 'string', array: true, alias: 'i' })
      .option('output', { type: 'string', alias: 'o', demandOption: true })
      .option('param', { type: 'string', array: true, alias: 'p', describe: 'job parameter key=value (repeatable)' })
      .option('reducers', { type: 'number', alias: 'r' })
      .option('overwrite', { type: 'boolean', default: false })
      .option('pool', { type: 'string' })
      .option('weight', { type: 'number', describe: 'share inside the pool relative to its other jobs (FAIR)' })
      .option('mr-cluster', {
        type: 'string',
        describe: 'run on this MR-cluster (FAWKES); input and output under /mrc/NAME/',
      })
      .option('conf', {
        type: 'string',
        array: true,
        alias: 'c',
        describe: 'job setting key=value, e.g. shuffle.map.bufferBytes=16m (repeatable)',
      })
      .option('wait', {
        type: 'boolean',
        default: true,
        describe: 'follow the job until it ends (--no-wait to return at once)',
      }),
  handler: async (argv) => {
    await withClient(argv, async (client) => {
      const jobId = await client.submit(resolvePath(argv.module), {
        input: argv.input,
        output: argv.output,
        params: parseParams(argv.param),
        reducers: argv.reducers,
        overwrite: argv.overwrite,
        pool: argv.pool,
        weight: argv.weight,
        ...(argv['mr-cluster'] !== undefined ? { mrCluster: argv['mr-cluster'] } : {}),
        conf: parseConfPairs(argv.conf),
      });
      await followJob(client, jobId, argv.wait);
    });
  },
});

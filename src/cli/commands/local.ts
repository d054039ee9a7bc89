/** `minimr local`: an embedded cluster on this machine, and the quick-start example on it. */
import { stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MinimrError } from '../../errors.js';
import { createLogger } from '../../log.js';
import { LocalCluster } from '../../local/index.js';
import { forgetClusterSecret, recordClusterSecret } from '../../runtime/index.js';
import { formatBytes, parseSize } from '../../util/index.js';
import { progressPrinter } from '../job-output.js';
import { defineCommand, policyOptions, policySettings } from '../options.js';

/** Where clients look for a JobTracker by default (ws://127.0.0.1:7700). */
const LOCAL_PORT = 7700;

/** Whether a TCP port of loopback is free now (a cluster started just after takes it). */
async function loopbackPortFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * The JobTracker's port: --port as given (a busy one is an error naming it), else 7700 when free
 * (saying so when it is not, and taking any free port), and any free port for --example.
 */
async function choosePort(asked: number | undefined, example: boolean): Promise<{ port: number; note?: string }> {
  if (asked === 0 || (asked === undefined && example)) return { port: 0 };
  const port = asked ?? LOCAL_PORT;
  if (await loopbackPortFree(port)) return { port };
  if (asked !== undefined)
    throw new MinimrError('EBUSY', `port ${port} is in use: give another --port, or 0 for any free port`);
  return {
    port: 0,
    note: `port ${LOCAL_PORT} is in use (another cluster?): took a free port; clients need the MINIMR_JOBTRACKER below`,
  };
}

const APPS_DIR = fileURLToPath(new URL('../../../apps/', import.meta.url));
const SAMPLE_TEXT = fileURLToPath(new URL('../../../../apps/data/sample.txt', import.meta.url));

async function readAll(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

/** The quick-start demo: WordCount on the bundled sample text, then the most frequent words. */
async function runWordCountExample(cluster: LocalCluster, top: number): Promise<void> {
  const fs = cluster.client.fs;
  const input = '/examples/sample.txt';
  const output = '/examples/wordcount';
  const size = (await stat(SAMPLE_TEXT)).size;
  process.stderr.write(`putting ${SAMPLE_TEXT} (${formatBytes(size)}) into the block store at ${input}\n`);
  await fs.put(SAMPLE_TEXT, input, { overwrite: true });
  const jobId = await cluster.client.submit(resolvePath(APPS_DIR, 'wordcount.js'), {
    input: [input],
    output,
    overwrite: true,
    reducers: 2,
  });
  const started = Date.now();
  const status = await cluster.client.waitForCompletion(jobId, { onProgress: progressPrinter(jobId) });
  process.stderr.write(
    `WordCount finished ` +
      `in ${((Date.now() - started) / 1000).toFixed(2)} s ` +
      `with ${status.mapsTotal} maps and ${status.reducesTotal} ` +
      `reduces\n`,
  );
  const counts: Array<[string, number]> = [];
  for (const f of await fs.list(output)) {
    if (!/part-r-/.test(f.path)) continue;
    for (const line of (await readAll(fs.cat(f.path))).toString('utf8').split('\n')) {
      const tab = line.lastIndexOf('\t');
      if (tab > 0) counts.push([line.slice(0, tab), Number(line.slice(tab + 1))]);
    }
  }
  counts.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  process.stdout.write(`top ${top} words of ${counts.length} distinct:\n`);
  for (const [word, n] of counts.slice(0, top)) process.stdout.write(`${String(n).padStart(8)}  ${word}\n`);
}

export const localCommand = defineCommand({
  command: 'local',
  describe: 'run an embedded cluster on this machine (JobTracker here, workers as child processes)',
  builder: (y) =>
    policyOptions(
      y
        .option('workers', { type: 'number', default: 3, describe: 'number of worker processes' })
        .option('dir', { type: 'string', default: '.minimr/local', describe: 'data directory' })
        .option('port', {
          type: 'number',
          describe: `JobTracker port (default ${LOCAL_PORT}, where clients look, when free; 0: any free port)`,
        })
        .option('block-size', { type: 'string', describe: 'block size (e.g. 64m); default 64m, the example uses 64k' })
        .option('replication', { type: 'number', default: 2 })
        .option('map-slots', { type: 'number', default: 2 })
        .option('reduce-slots', { type: 'number', default: 1 })
        .option('memory-mb', {
          type: 'number',
          describe: 'memory each worker offers to tasks, MB (default: 512 per slot)',
        })
        .option('memory-step-mb', {
          type: 'number',
          describe: 'elastic grants are whole multiples of this, MB (default 100)',
        })
        .option('task-expiry-ms', {
          type: 'number',
          describe: "a silent worker's attempts run again elsewhere after this long, ms (default 60 s)",
        })
        .option('datanode-expiry-ms', {
          type: 'number',
          describe: "a silent worker's blocks are re-replicated after this long, ms (default 10 minutes)",
        }),
    )
      .option('example', {
        choices: ['wordcount'] as const,
        describe: 'run an example job, print its result, and exit',
      })
      .option('top', { type: 'number', default: 20, describe: 'words to show for --example wordcount' }),
  handler: async (argv) => {
    const blockSize = argv['block-size'] ? parseSize(argv['block-size']) : argv.example ? 64 * 1024 : undefined;
    const { policyOptions, pools } = await policySettings(argv);
    const { port, note } = await choosePort(argv.port, argv.example !== undefined);
    const cluster = await LocalCluster.start({
      policyOptions,
      pools,
      dataDir: resolvePath(argv.dir),
      workers: argv.workers,
      port,
      blockSize,
      replication: argv.replication,
      mapSlots: argv['map-slots'],
      reduceSlots: argv['reduce-slots'],
      memoryMb: argv['memory-mb'],
      memoryStepMb: argv['memory-step-mb'],
      taskExpiryMs: argv['task-expiry-ms'],
      datanodeExpiryMs: argv['datanode-expiry-ms'],
      policy: argv.policy,
      logger: createLogger('local', process.env.MINIMR_LOG_LEVEL ?? 'warn'),
    });
    process.stderr.write(
      `local cluster up: JobTracker ${cluster.url}, ${argv.workers} workers, data in ${resolvePath(argv.dir)}\n`,
    );
    if (argv.example) {
      try {
        await runWordCountExample(cluster, argv.top);
      } finally {
        await cluster.stop();
      }
      return;
    }
    await recordClusterSecret(cluster.url, cluster.jobTracker.secretFile).catch(() => undefined);
    if (note !== undefined) process.stderr.write(`${note}\n`);
    const found = cluster.url === `ws://127.0.0.1:${LOCAL_PORT}`;
    process.stderr.write(
      `submit jobs with: ${found ? '' : `MINIMR_JOBTRACKER=${cluster.url} `}minimr submit ...  ` +
        '(Ctrl-C stops the cluster)\n',
    );
    process.stderr.write(
      `cluster secret: ${cluster.jobTracker.secretFile} (found by ` +
        `this user's commands on this machine; elsewhere give it with ` +
        `MINIMR_SECRET_FILE)\n`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await forgetClusterSecret(cluster.url);
    await cluster.stop();
  },
});

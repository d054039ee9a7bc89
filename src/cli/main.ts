import { mkdir as mkdirLocal, readFile as readFileLocal, stat as statLocal, writeFile as writeFileLocal } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import type { JsonValue } from '../api/index.js';
import { DEFAULT_WORKER_LIMITS } from '../books/index.js';
import { MinimrError } from '../errors.js';
import { benchPolicies } from '../experiments/index.js';
import { createLogger } from '../log.js';
import {
  ATTEMPT_LOG_STREAMS,
  DEFAULT_LOG_READ_BYTES,
  type JobClient,
  JobTracker,
  MAX_LOG_READ_BYTES,
  LocalCluster,
  Worker,
  profileJob,
  profileMarkdown,
  profileSvg,
  THROTTLE_BASES,
  parseConfPairs,
  type JobStatus,
  type ThrottleBasis,
} from '../runtime/index.js';
import { forgetClusterSecret, recordClusterSecret, webPassword } from '../runtime/auth.js';
import { createPolicy, parsePools, type PolicyOptions, type PoolView } from '../scheduler/index.js';
import { runSimCommand } from '../sim/index.js';
import { formatMode, parseMode } from '../storage/index.js';
import { commandOf, configFor, configPathOf, readConfigFile } from './config.js';
import { escapeControlCharacters, formatBytes, keyValuePairs, parseSize } from '../util/index.js';
import { DEFAULT_JOBTRACKER, peerSecurity, tlsIdentity, withClient } from './client.js';
import { fsckCommand, mrcCommands } from './mrc-commands.js';

const APPS_DIR = fileURLToPath(new URL('../../apps/', import.meta.url));
const SAMPLE_TEXT = fileURLToPath(new URL('../../../apps/data/sample.txt', import.meta.url));

function parseParams(list: readonly string[] | undefined): Record<string, JsonValue> {
  const params: Record<string, JsonValue> = {};
  for (const [key, raw] of keyValuePairs(list, '--param')) {
    params[key] = raw !== '' && !Number.isNaN(Number(raw)) && /^-?\d/.test(raw) ? Number(raw) : raw;
  }
  return params;
}

/** Shows map/reduce progress: one updating line on a terminal, a line per change otherwise. */
/** `--policy-options` (a JSON object) and `--pools` (a JSON file), checked before anything starts. */
async function policySettings(argv: { 'policy-options'?: string; pools?: string }): Promise<{ policyOptions: PolicyOptions; pools: PoolView[] }> {
  let policyOptions: PolicyOptions = {};
  if (argv['policy-options'] !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(argv['policy-options']);
    } catch (err) {
      throw new MinimrError('EBADCONF', `--policy-options is not valid JSON: ${(err as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new MinimrError('EBADCONF', '--policy-options must be a JSON object');
    policyOptions = parsed as PolicyOptions;
  }
  let pools: PoolView[] = [];
  if (argv.pools !== undefined) {
    let text: string;
    try {
      text = await readFileLocal(resolvePath(argv.pools), 'utf8');
    } catch (err) {
      throw new MinimrError('EBADCONF', `cannot read the pools file ${argv.pools}: ${(err as Error).message}`);
    }
    try {
      pools = parsePools(JSON.parse(text));
    } catch (err) {
      if (err instanceof MinimrError) throw err;
      throw new MinimrError('EBADCONF', `the pools file ${argv.pools} is not valid JSON: ${(err as Error).message}`);
    }
  }
  return { policyOptions, pools };
}

function progressPrinter(jobId: string): (s: JobStatus) => void {
  const tty = process.stderr.isTTY;
  let last = '';
  return (s) => {
    const line = `${jobId} ${s.state.padEnd(9)} map ${String(Math.floor(s.mapProgress * 100)).padStart(3)}% reduce ${String(Math.floor(s.reduceProgress * 100)).padStart(3)}%`;
    if (line === last) return;
    last = line;
    if (tty) process.stderr.write(`\r${line}${s.state === 'running' || s.state === 'pending' ? '' : '\n'}`);
    else process.stderr.write(`${line}\n`);
  };
}

function printStatus(s: JobStatus): void {
  const secs = s.finishTime && s.startTime ? ((s.finishTime - s.startTime) / 1000).toFixed(2) : '-';
  process.stdout.write(
    `${s.jobId}  ${escapeControlCharacters(s.name)}  ${s.user}  ${s.state}  maps ${s.mapsCompleted}/${s.mapsTotal}  reduces ${s.reducesCompleted}/${s.reducesTotal}  ${secs}s  output ${s.outputPath}\n`,
  );
  if (s.error) process.stdout.write(`  error ${s.error.code}: ${s.error.message}\n`);
}

/** How the job's tasks were planned: from the profile of its name, or regular. */
function printProfileUse(s: JobStatus): void {
  const p = s.profile;
  if (p.state === 'none') process.stdout.write(`  profile: none (first run of ${s.name}): tasks run regular\n`);
  else if (p.state === 'rejected') process.stdout.write(`  profile: not usable (${p.reason}): tasks run regular\n`);
  else {
    for (const [kind, f] of [['map', p.map], ['reduce', p.reduce]] as const) {
      if (!f) continue;
      const rate = f.diskMBps !== undefined ? `disk ${f.diskMBps} MB/s fitted` : "the worker's disk rate";
      process.stdout.write(`  profile ${kind}: ideal ${f.idealDurationMs} ms, needs ${f.neededMemoryMb} MB, penalty ${f.penalty}${f.penalty === 'spill' ? ` (${rate})` : ''}, from ${f.attempts} attempts\n`);
    }
  }
  if (s.elasticAttempts > 0) process.stdout.write(`  elastic attempts: ${s.elasticAttempts} (granted less than ideal memory; see \`minimr job attempts\`)\n`);
}

function printCounters(s: JobStatus): void {
  for (const [k, v] of Object.entries(s.counters).sort()) if (v) process.stderr.write(`  ${k.padEnd(28)} ${v}\n`);
}

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
  const size = (await statLocal(SAMPLE_TEXT)).size;
  process.stderr.write(`putting ${SAMPLE_TEXT} (${formatBytes(size)}) into the block store at ${input}\n`);
  await fs.put(SAMPLE_TEXT, input, { overwrite: true });
  const jobId = await cluster.client.submit(resolvePath(APPS_DIR, 'wordcount.js'), { input: [input], output, overwrite: true, reducers: 2 });
  const started = Date.now();
  const status = await cluster.client.waitForCompletion(jobId, { onProgress: progressPrinter(jobId) });
  process.stderr.write(`WordCount finished in ${((Date.now() - started) / 1000).toFixed(2)} s with ${status.mapsTotal} maps and ${status.reducesTotal} reduces\n`);
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

async function main(): Promise<void> {
  const args = hideBin(process.argv);
  const configPath = configPathOf(args);
  const config = configPath !== undefined ? configFor(await readConfigFile(configPath), commandOf(args)) : {};
  await yargs(args)
    .scriptName('minimr')
    .usage('$0 <command> [options]')
    .option('secret-file', { type: 'string', describe: 'the cluster secret file (default: $MINIMR_SECRET_FILE; a cluster this user started here is found by itself)' })
    .option('user', { type: 'string', describe: 'the user to act as (default: $MINIMR_USER, else the OS user)' })
    .option('tls-ca', { type: 'string', describe: 'certificate authority to trust for a wss:// JobTracker (PEM; default: $MINIMR_TLS_CA)' })
    .option('config', { type: 'string', global: true, describe: 'JSON file of options by command ({"worker": {"rack": "/r1"}, ...}); flags on the command line win' })
    .config(config)
    .command(
      'local',
      'run an embedded cluster on this machine (JobTracker here, workers as child processes)',
      (y) =>
        y
          .option('workers', { type: 'number', default: 3, describe: 'number of worker processes' })
          .option('dir', { type: 'string', default: '.minimr/local', describe: 'data directory' })
          .option('port', { type: 'number', default: 0, describe: 'JobTracker port (0: any free port)' })
          .option('block-size', { type: 'string', describe: 'block size (e.g. 64m); default 64m, the example uses 64k' })
          .option('replication', { type: 'number', default: 2 })
          .option('map-slots', { type: 'number', default: 2 })
          .option('reduce-slots', { type: 'number', default: 1 })
          .option('memory-mb', { type: 'number', describe: 'memory each worker offers to tasks, MB (default: 512 per slot)' })
          .option('memory-step-mb', { type: 'number', describe: 'elastic grants are whole multiples of this, MB (default 100)' })
          .option('policy', { type: 'string', default: 'fifo' })
          .option('policy-options', { type: 'string', describe: 'policy settings as a JSON object' })
          .option('pools', { type: 'string', describe: 'JSON file listing pools with minimum shares and weights' })
          .option('example', { choices: ['wordcount'] as const, describe: 'run an example job, print its result, and exit' })
          .option('top', { type: 'number', default: 20, describe: 'words to show for --example wordcount' }),
      async (argv) => {
        const blockSize = argv['block-size'] ? parseSize(argv['block-size']) : argv.example ? 64 * 1024 : undefined;
        const { policyOptions, pools } = await policySettings(argv);
        const cluster = await LocalCluster.start({
          policyOptions,
          pools,
          dataDir: resolvePath(argv.dir),
          workers: argv.workers,
          port: argv.port,
          blockSize,
          replication: argv.replication,
          mapSlots: argv['map-slots'],
          reduceSlots: argv['reduce-slots'],
          memoryMb: argv['memory-mb'],
          memoryStepMb: argv['memory-step-mb'],
          policy: argv.policy,
          logger: createLogger('local', process.env.MINIMR_LOG_LEVEL ?? 'warn'),
        });
        process.stderr.write(`local cluster up: JobTracker ${cluster.url}, ${argv.workers} workers, data in ${resolvePath(argv.dir)}\n`);
        if (argv.example) {
          try {
            await runWordCountExample(cluster, argv.top);
          } finally {
            await cluster.stop();
          }
          return;
        }
        await recordClusterSecret(cluster.url, cluster.jobTracker.secretFile).catch(() => undefined);
        process.stderr.write(`submit jobs with: MINIMR_JOBTRACKER=${cluster.url} minimr submit ...  (Ctrl-C stops the cluster)\n`);
        process.stderr.write(`cluster secret: ${cluster.jobTracker.secretFile} (found by this user's commands on this machine; elsewhere give it with MINIMR_SECRET_FILE)\n`);
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await forgetClusterSecret(cluster.url);
        await cluster.stop();
      },
    )
    .command(
      'sim',
      'simulate a workload on a simulated cluster under one or more policies (discrete-event, deterministic)',
      (y) =>
        y
          .option('workload', { type: 'string', demandOption: true, describe: 'hvw|mvw|lvw|wkld-a..e|yarn-me-uniform|yarn-me-exp|improved-fair, or a .json minimr workload, Hadoop SLS job trace or Hadoop Rumen job trace' })
          .option('cluster', { type: 'string', describe: 'preset (tyrex-20, improved-fair-12, fawkes-60, fawkes-48, yarn-me-50, yarn-me-100, yarn-me-3000), or a .json minimr cluster file or Hadoop SLS node file; default: the workload\'s' })
          .option('policy', { type: 'string', array: true, default: ['fifo'], describe: 'policy name; repeat to compare' })
          .option('policy-options', { type: 'string', describe: 'policy settings as a JSON object' })
          .option('seed', { type: 'number', default: 1 })
          .option('load', { type: 'number', describe: 'offered load for the Tyrex workloads (default 0.7)' })
          .option('scale', { type: 'number', describe: 'workload scale (jobs or sizes, per generator)' })
          .option('heartbeat-ms', { type: 'number', describe: 'default: max(3 s, workers / 100 s)' })
          .option('noise', { type: 'number', describe: 'duration mis-estimation, e.g. 0.15 for +-15%' })
          .option('memory-noise', { type: 'number', describe: 'ideal memory mis-estimation (YARN-ME), e.g. 0.15 for +-15%' })
          .option('penalty-noise', { type: 'number', describe: 'penalty mis-estimation (YARN-ME), e.g. 0.15 for +-15%' })
          .option('node-memory-mb', { type: 'number', describe: 'memory of an SLS/DSS topology file\'s nodes (default 10240)' })
          .option('node-cores', { type: 'number', describe: 'cores of an SLS/DSS topology file\'s nodes (default 10)' })
          .option('meganode', { type: 'boolean', describe: 'pool the cluster into one node (YARN-ME\'s meganode bound, with --policy srjf)' })
          .option('reduce-slow-start', { type: 'number', describe: "fraction of a job's maps done before its reduces launch (Hadoop 1: 0.05); default 1, as minimr runs" })
          .option('out', { type: 'string', describe: 'directory for results.json, results.md and SVG plots' }),
      async (argv) => {
        const { policyOptions } = await policySettings(argv);
        const { table, files } = await runSimCommand(
          {
            workload: argv.workload,
            cluster: argv.cluster,
            policies: argv.policy.map(String),
            policyOptions,
            seed: argv.seed,
            load: argv.load,
            scale: argv.scale,
            heartbeatMs: argv['heartbeat-ms'],
            noise: argv.noise,
            memoryNoise: argv['memory-noise'],
            penaltyNoise: argv['penalty-noise'],
            nodeMemoryMb: argv['node-memory-mb'],
            nodeCores: argv['node-cores'],
            meganode: argv.meganode,
            reduceSlowStart: argv['reduce-slow-start'],
            out: argv.out,
          },
          (line) => process.stderr.write(`${line}\n`),
        );
        process.stdout.write(table);
        for (const f of files) process.stderr.write(`wrote ${f}\n`);
      },
    )
    .command(
      'jobtracker',
      'run a JobTracker (master + NameNode)',
      (y) =>
        y
          .option('dir', { type: 'string', default: '.minimr/jobtracker' })
          .option('host', { type: 'string', default: '127.0.0.1', describe: 'address to listen on (loopback only by default; 0.0.0.0 for every interface)' })
          .option('admin', { type: 'string', describe: 'the user who may act on every job and path (default: the OS user running the JobTracker)' })
          .option('tls-cert', { type: 'string', describe: 'serve wss:// with this certificate (PEM); needs --tls-key' })
          .option('tls-key', { type: 'string', describe: 'private key of --tls-cert (PEM)' })
          .option('port', { type: 'number', default: 7700 })
          .option('policy', { type: 'string', default: 'fifo' })
          .option('policy-options', { type: 'string', describe: 'policy settings as a JSON object' })
          .option('pools', { type: 'string', describe: 'JSON file listing pools with minimum shares and weights' })
          .option('heartbeat-ms', { type: 'number', default: 1000 })
          .option('worker-timeout-ms', { type: 'number' })
          .option('block-size', { type: 'string', default: '64m' })
          .option('replication', { type: 'number', default: 3 })
          .option('max-attempts', { type: 'number', default: 4 })
          .option('memory-step-mb', { type: 'number', describe: 'elastic grants are whole multiples of this, MB (default 100)' })
          .option('retained-jobs', { type: 'number', default: 100, describe: 'ended jobs kept in memory; older ones retire to the history (job list --all)' })
          .option('retain-ms', { type: 'number', default: 3_600_000, describe: 'an ended job retires to the history after this long, ms' })
          .option('recovery-wait-ms', { type: 'number', describe: "after a restart, how long recovered jobs wait for their workers to register again, ms (default max(10 s, the worker timeout))" })
          .option('max-worker-map-slots', { type: 'number', default: DEFAULT_WORKER_LIMITS.maxMapSlots, describe: 'a worker claiming more map slots is refused at registration' })
          .option('max-worker-reduce-slots', { type: 'number', default: DEFAULT_WORKER_LIMITS.maxReduceSlots, describe: 'a worker claiming more reduce slots is refused' })
          .option('max-worker-memory-mb', { type: 'number', default: DEFAULT_WORKER_LIMITS.maxMemoryMb, describe: 'a worker claiming more memory is refused' }),
      async (argv) => {
        const { policyOptions, pools } = await policySettings(argv);
        const limitFlags = ['max-worker-map-slots', 'max-worker-reduce-slots', 'max-worker-memory-mb'] as const;
        for (const flag of limitFlags) {
          const value = argv[flag];
          if (!(Number.isInteger(value) && value > 0)) throw new MinimrError('EBADCONF', `--${flag} must be a positive integer, got ${value}`);
        }
        const limits = { maxMapSlots: argv['max-worker-map-slots'], maxReduceSlots: argv['max-worker-reduce-slots'], maxMemoryMb: argv['max-worker-memory-mb'] };
        const secretFile = argv['secret-file'] ?? process.env.MINIMR_SECRET_FILE;
        const jt = new JobTracker({
          retainedJobs: argv['retained-jobs'],
          retainMs: argv['retain-ms'],
          recoveryWaitMs: argv['recovery-wait-ms'],
          dataDir: resolvePath(argv.dir),
          host: argv.host,
          port: argv.port,
          policy: createPolicy(argv.policy, policyOptions),
          pools,
          heartbeatMs: argv['heartbeat-ms'],
          workerTimeoutMs: argv['worker-timeout-ms'],
          blockSize: parseSize(argv['block-size']),
          replication: argv.replication,
          maxAttempts: argv['max-attempts'],
          memoryStepMb: argv['memory-step-mb'],
          secretFile: secretFile ? resolvePath(secretFile) : undefined,
          admin: argv.admin,
          tls: await tlsIdentity(argv['tls-cert'], argv['tls-key']),
          workerLimits: limits,
        });
        await jt.start();
        await recordClusterSecret(jt.url, jt.secretFile).catch(() => undefined);
        process.stderr.write(`JobTracker ${jt.url}, admin ${jt.admin}, cluster secret ${jt.secretFile} (give it to workers and clients with --secret-file or MINIMR_SECRET_FILE)\n`);
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await forgetClusterSecret(jt.url);
        await jt.stop();
      },
    )
    .command(
      'worker',
      'run a worker (TaskTracker + DataNode)',
      (y) =>
        y
          .option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER })
          .option('dir', { type: 'string', default: '.minimr/worker' })
          .option('id', { type: 'string', describe: 'worker id (default: hostname-pid)' })
          .option('host', { type: 'string', describe: "address others use to reach this worker (default: this machine's address on the route to the JobTracker)" })
          .option('bind', { type: 'string', describe: 'address the data port binds to (default: --host)' })
          .option('data-port', { type: 'number', default: 0 })
          .option('rack', { type: 'string', default: '/default-rack' })
          .option('map-slots', { type: 'number', default: 2 })
          .option('reduce-slots', { type: 'number', default: 1 })
          .option('memory-mb', { type: 'number' })
          .option('disk-mbps', { type: 'number', describe: 'disk rate to report, MB/s (default: measured at start-up)' })
          .option('cpu-throttle', {
            type: 'number',
            default: 1,
            describe: 'slow this worker down for experiments: its tasks take ~F times as long (see --cpu-throttle-basis)',
          })
          .option('cpu-throttle-basis', {
            choices: THROTTLE_BASES,
            default: 'working' as ThrottleBasis,
            describe: "what --cpu-throttle stretches: 'working' time (a worker F times slower than the others) or 'cpu' time (workers each with a core of their own, F times slower, not sharing this machine's)",
          })
          .option('attempt-log-max-mb', { type: 'number', default: 16, describe: "MB of stdout and of stderr kept per attempt (the rest is counted, not kept)" })
          .option('log-retain-hours', { type: 'number', default: 24, describe: 'attempt logs of a job are removed this long after its last attempt on this worker started' }),
      async (argv) => {
        const security = await peerSecurity(argv);
        if (!security.credentials) {
          throw new MinimrError('EAUTH', `a worker needs the cluster secret: give the JobTracker's secret file with --secret-file or MINIMR_SECRET_FILE`);
        }
        const worker = new Worker({
          security,
          jobTrackerUrl: argv.jobtracker,
          dataDir: resolvePath(argv.dir),
          workerId: argv.id,
          host: argv.host,
          bindHost: argv.bind,
          dataPort: argv['data-port'],
          rack: argv.rack,
          mapSlots: argv['map-slots'],
          reduceSlots: argv['reduce-slots'],
          memoryMb: argv['memory-mb'],
          diskMBps: argv['disk-mbps'],
          cpuThrottle: argv['cpu-throttle'],
          cpuThrottleBasis: argv['cpu-throttle-basis'],
          attemptLogMaxBytes: Math.round(argv['attempt-log-max-mb'] * 1024 * 1024),
          logRetainHours: argv['log-retain-hours'],
        });
        await worker.start();
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await worker.stop();
        process.exit(0);
      },
    )
    .command(
      'submit <module>',
      'submit a job module (.js or .ts) and follow it',
      (y) =>
        y
          .positional('module', { type: 'string', demandOption: true })
          .option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER })
          .option('input', { type: 'string', array: true, alias: 'i' })
          .option('output', { type: 'string', alias: 'o', demandOption: true })
          .option('param', { type: 'string', array: true, alias: 'p', describe: 'job parameter key=value (repeatable)' })
          .option('reducers', { type: 'number', alias: 'r' })
          .option('overwrite', { type: 'boolean', default: false })
          .option('pool', { type: 'string' })
          .option('weight', { type: 'number', describe: 'share inside the pool relative to its other jobs (FAIR)' })
          .option('mr-cluster', { type: 'string', describe: 'run on this MR-cluster (FAWKES); input and output under /mrc/NAME/' })
          .option('conf', { type: 'string', array: true, alias: 'c', describe: 'job setting key=value, e.g. shuffle.map.bufferBytes=16m (repeatable)' })
          .option('wait', { type: 'boolean', default: true, describe: 'follow the job until it ends (--no-wait to return at once)' }),
      async (argv) => {
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
          if (!argv.wait) {
            process.stdout.write(`${jobId}\n`);
            return;
          }
          const status = await client.waitForCompletion(jobId, { onProgress: progressPrinter(jobId) });
          printStatus(status);
          printCounters(status);
        });
      },
    )
    .command(
      'profile <module>',
      'elasticity profile: one map and one reduce at ideal memory and at fractions of it; fits T(m) = T + spilled(m)/diskRate',
      (y) =>
        y
          .positional('module', { type: 'string', demandOption: true })
          .option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER })
          .option('input', { type: 'string', array: true, alias: 'i', demandOption: true })
          .option('param', { type: 'string', array: true, alias: 'p' })
          .option('conf', { type: 'string', array: true, alias: 'c' })
          .option('fractions', { type: 'string', default: '1,0.75,0.5,0.25,0.1', describe: 'memory fractions of ideal' })
          .option('maps', { type: 'number', default: 1, describe: 'map tasks per run (their output is the reducer input)' })
          .option('out', { type: 'string', default: 'bench-results', describe: 'local directory for profile-<job>.{json,md,svg}' }),
      async (argv) => {
        const fractions = argv.fractions.split(',').map(Number);
        if (fractions.some((f) => !(f > 0 && f <= 1))) throw new MinimrError('EBADJOB', `--fractions must be numbers in (0, 1], got ${argv.fractions}`);
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
          await mkdirLocal(resolvePath(argv.out), { recursive: true });
          await writeFileLocal(`${base}.json`, JSON.stringify(result, null, 2));
          await writeFileLocal(`${base}.md`, `${profileMarkdown(result)}\n`);
          await writeFileLocal(`${base}.svg`, profileSvg(result));
          process.stdout.write(`${profileMarkdown(result)}\n\nwrote ${base}.{json,md,svg}\n`);
        };
        await withClient(argv, profile);
      },
    )
    .command('profiles', 'profiles of recurring jobs kept by the JobTracker: list | show | import | rm', (y) =>
      y
        .option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER })
        .command('list', 'list the profiles', (yy) => yy, async (argv) => {
          await withClient(argv, async (c) => {
            for (const p of await c.profiles()) {
              const attempts = (b: readonly { attempts: number }[]) => Math.round(b.reduce((n, x) => n + x.attempts, 0));
              const sizes = (b: readonly { bufferMiB: number }[]) => b.map((x) => x.bufferMiB).join(',') || '-';
              process.stdout.write(
                `${p.job}  runs ${p.runs}  imports ${p.imports}  maps ${attempts(p.map)} at buffers ${sizes(p.map)} MiB  reduces ${attempts(p.reduce)} at ${sizes(p.reduce)} MiB  updated ${new Date(p.updatedAt).toISOString()}\n`,
              );
            }
          });
        })
        .command('show <job>', "print a job's profile (JSON)", (yy) => yy.positional('job', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            const [p] = await c.profiles(argv.job);
            if (!p) throw new MinimrError('ENOENT', `no profile of a job named ${argv.job} (see \`minimr profiles list\`)`);
            process.stdout.write(`${JSON.stringify(p, null, 2)}\n`);
          });
        })
        .command(
          'import <file>',
          'add a `minimr profile` result (profile-JOB.json) to the profile of its job',
          (yy) =>
            yy
              .positional('file', { type: 'string', demandOption: true })
              .option('job', { type: 'string', describe: "the job's name (defineJob's `name`); default: the one the profile recorded" }),
          async (argv) => {
            let parsed: unknown;
            try {
              parsed = JSON.parse(await readFileLocal(resolvePath(argv.file), 'utf8'));
            } catch (err) {
              throw new MinimrError('EBADCONF', `cannot read the profile ${argv.file}: ${(err as Error).message}`);
            }
            if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new MinimrError('EBADCONF', `${argv.file} is not a \`minimr profile\` result (a JSON object)`);
            const named = (parsed as { jobName?: unknown }).jobName;
            const job = argv.job ?? (typeof named === 'string' ? named : undefined);
            if (!job) throw new MinimrError('EBADCONF', `${argv.file} does not say which job it profiles: give --job NAME (the name in its defineJob)`);
            await withClient(argv, async (c) => {
              const p = await c.importProfile(job, parsed as Record<string, JsonValue>);
              process.stdout.write(`profile of ${p.job}: ${p.runs} runs, ${p.imports} imports\n`);
            });
          },
        )
        .command('rm <job>', "forget a job's profile (its next run is regular)", (yy) => yy.positional('job', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            if (!(await c.removeProfile(argv.job))) throw new MinimrError('ENOENT', `no profile of a job named ${argv.job}`);
          });
        })
        .demandCommand(1),
    )
    .command('job', 'job status | attempts | logs | list | kill', (y) =>
      y
        .option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER })
        .command('status <id>', 'show a job', (yy) => yy.positional('id', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            const s = await c.status(argv.id);
            printStatus(s);
            printProfileUse(s);
            printCounters(s);
          });
        })
        .command('attempts <id>', 'list a job\'s attempts with their workers, times and counters', (yy) => yy.positional('id', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            for (const a of await c.attempts(argv.id)) {
              const ms = a.finishTime ? a.finishTime - a.startTime : undefined;
              const pick = (k: string) => (a.counters[k] !== undefined ? ` ${k}=${a.counters[k]}` : '');
              process.stdout.write(
                `${a.attemptId} ${a.state.padEnd(9)} ${a.workerId} ${ms ?? '-'} ms ${a.memoryMb} MB${a.elastic ? ` elastic (ideal ${a.idealMemoryMb} MB)` : ''}${pick('SPILLED_BYTES')}${pick('MERGE_PASSES')}${pick('PEAK_RSS_BYTES')}${a.error ? ` ${a.error.code}: ${a.error.message}` : ''}\n`,
              );
            }
          });
        })
        .command(
          'logs <attempt>',
          "print an attempt's stdout and stderr, read from the worker that ran it (the last 64 KiB of each by default)",
          (yy) =>
            yy
              .positional('attempt', { type: 'string', demandOption: true })
              .option('stream', { choices: ['stdout', 'stderr', 'both'] as const, default: 'both' as const })
              .option('offset', { type: 'number', describe: 'start at this byte (default: the tail)' })
              .option('length', { type: 'number', describe: `bytes to read, at most ${MAX_LOG_READ_BYTES} (default ${DEFAULT_LOG_READ_BYTES})` }),
          async (argv) => {
            await withClient(argv, async (c) => {
              const streams = argv.stream === 'both' ? ATTEMPT_LOG_STREAMS : [argv.stream];
              for (const stream of streams) {
                const slice = await c.attemptLog(argv.attempt, stream, { ...(argv.offset !== undefined ? { offset: argv.offset } : {}), ...(argv.length !== undefined ? { length: argv.length } : {}) });
                const end = slice.offset + Buffer.byteLength(slice.text);
                if (streams.length > 1) process.stdout.write(`==> ${stream} of ${slice.attemptId} on ${slice.workerId} (bytes ${slice.offset}-${end} of ${slice.size}) <==\n`);
                else if (slice.offset > 0 || end < slice.size) process.stderr.write(`bytes ${slice.offset}-${end} of ${slice.size} (--offset and --length read the rest)\n`);
                process.stdout.write(slice.text);
                if (streams.length > 1 && slice.text !== '' && !slice.text.endsWith('\n')) process.stdout.write('\n');
              }
            });
          },
        )
        .command(
          'list',
          'list jobs: running, queued and recently ended (--all: and the retired ones, from the history)',
          (yy) => yy.option('all', { type: 'boolean', default: false, describe: 'include jobs retired from memory to the history' }),
          async (argv) => {
            await withClient(argv, async (c) => (await c.list(argv.all)).forEach(printStatus));
          },
        )
        .command('kill <id>', 'kill a job', (yy) => yy.positional('id', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => printStatus(await c.kill(argv.id)));
        })
        .demandCommand(1),
    )
    .command('mrc', 'MR-clusters (FAWKES): activate | list | deactivate', mrcCommands)
    .command(
      'web-password',
      "print the password of the JobTracker's web pages and /metrics (HTTP Basic, any user name), derived from the cluster secret",
      (y) => y.option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER }),
      async (argv) => {
        const { credentials } = await peerSecurity(argv);
        if (!credentials) throw new MinimrError('EAUTH', `no cluster secret for ${argv.jobtracker}: give --secret-file (or $MINIMR_SECRET_FILE)`);
        process.stdout.write(`${webPassword(credentials.secret)}\n`);
      },
    )
    .command('fs', 'the block store: put | get | cat | ls | rm | stat | mkdir | chmod | chown | fsck', (y) =>
      fsckCommand(y.option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER }))
        .command(
          'put <local> <path>',
          'copy a local file into the block store',
          (yy) =>
            yy
              .positional('local', { type: 'string', demandOption: true })
              .positional('path', { type: 'string', demandOption: true })
              .option('overwrite', { type: 'boolean', default: false, alias: 'f' })
              .option('replication', { type: 'number' })
              .option('block-size', { type: 'string' }),
          async (argv) => {
            await withClient(argv, async (c) => {
              const size = (await statLocal(argv.local)).size;
              const started = Date.now();
              await c.fs.put(resolvePath(argv.local), argv.path, {
                overwrite: argv.overwrite,
                replication: argv.replication,
                blockSize: argv['block-size'] ? parseSize(argv['block-size']) : undefined,
              });
              process.stderr.write(`put ${formatBytes(size)} in ${((Date.now() - started) / 1000).toFixed(2)} s\n`);
            });
          },
        )
        .command(
          'get <path> <local>',
          'copy a file out of the block store',
          (yy) => yy.positional('path', { type: 'string', demandOption: true }).positional('local', { type: 'string', demandOption: true }),
          async (argv) => {
            await withClient(argv, (c) => c.fs.get(argv.path, resolvePath(argv.local)));
          },
        )
        .command('cat <path>', 'print a file', (yy) => yy.positional('path', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            const st = await c.fs.stat(argv.path);
            const files = st.type === 'dir' ? (await c.fs.list(argv.path)).filter((f) => f.type === 'file').map((f) => f.path) : [argv.path];
            for (const f of files) await pipeline(Readable.from(c.fs.cat(f)), process.stdout, { end: false });
          });
        })
        .command('ls [path]', 'list a directory', (yy) => yy.positional('path', { type: 'string', default: '/' }), async (argv) => {
          await withClient(argv, async (c) => {
            const entries = await c.fs.list(String(argv.path));
            const ownerWidth = Math.max(0, ...entries.map((f) => f.owner.length));
            const groupWidth = Math.max(0, ...entries.map((f) => f.group.length));
            for (const f of entries) {
              process.stdout.write(
                `${formatMode(f.type, f.mode)} ${String(f.replication).padStart(2)} ${f.owner.padEnd(ownerWidth)} ${f.group.padEnd(groupWidth)} ${String(f.length).padStart(12)} ${new Date(f.mtime).toISOString()} ${escapeControlCharacters(f.path)}\n`,
              );
            }
          });
        })
        .command(
          'chmod <mode> <path>',
          "set a path's mode bits, octal (755, 1777 for a sticky directory); its owner or the admin",
          (yy) => yy.positional('mode', { type: 'string', demandOption: true }).positional('path', { type: 'string', demandOption: true }),
          async (argv) => {
            const mode = parseMode(argv.mode);
            await withClient(argv, (c) => c.fs.chmod(argv.path, mode));
          },
        )
        .command(
          'chown <owner> <path>',
          'give a path another owner (OWNER, OWNER:GROUP or :GROUP); the admin only',
          (yy) => yy.positional('owner', { type: 'string', demandOption: true }).positional('path', { type: 'string', demandOption: true }).option('recursive', { type: 'boolean', alias: 'R', default: false }),
          async (argv) => {
            const [owner, group] = argv.owner.includes(':') ? argv.owner.split(':', 2) : [argv.owner, ''];
            await withClient(argv, (c) => c.fs.chown(argv.path, owner || null, group || null, { recursive: argv.recursive }));
          },
        )
        .command(
          'rm <path>',
          'remove a file or (with -r) a directory',
          (yy) => yy.positional('path', { type: 'string', demandOption: true }).option('recursive', { type: 'boolean', alias: 'r', default: false }),
          async (argv) => {
            await withClient(argv, (c) => c.fs.remove(argv.path, { recursive: argv.recursive }));
          },
        )
        .command('stat <path>', 'show a file\'s blocks and replicas', (yy) => yy.positional('path', { type: 'string', demandOption: true }), async (argv) => {
          await withClient(argv, async (c) => {
            const st = await c.fs.stat(argv.path);
            process.stdout.write(`${JSON.stringify(st)}\n`);
            if (st.type === 'file') {
              for (const b of await c.fs.getBlocks(argv.path)) {
                process.stdout.write(`  ${b.blockId} offset ${b.offset} length ${b.length} crc32 ${b.crc32.toString(16)} on ${b.locations.map((l) => `${l.workerId}(${l.rack})`).join(', ')}\n`);
              }
            }
          });
        })
        .command(
          'mkdir <path>',
          'make a directory',
          (yy) => yy.positional('path', { type: 'string', demandOption: true }).option('parents', { type: 'boolean', alias: 'p', default: false }),
          async (argv) => {
            await withClient(argv, (c) => c.fs.mkdir(argv.path, { parents: argv.parents }));
          },
        )
        .demandCommand(1),
    )
    .command('bench', 'benchmarks: policies', (y) =>
      y
        .command(
          'policies',
          'run one workload under several policies, in the simulator and (--real) on a local cluster, and compare them',
          (yy) =>
            yy
              .option('workload', { type: 'string', demandOption: true, describe: 'hvw | mvw | lvw | wkld-a..e | yarn-me-uniform | yarn-me-exp | improved-fair | a minimr workload / Hadoop SLS / Hadoop Rumen JSON file' })
              .option('policies', { type: 'string', default: 'fifo,fair', describe: 'comma-separated policy names' })
              .option('cluster', { type: 'string', describe: "simulated cluster: a preset, or a minimr cluster / Hadoop SLS node JSON file (default: the workload's)" })
              .option('policy-options', { type: 'string', describe: 'JSON object: policy name -> its options' })
              .option('real-policy-options', { type: 'string', describe: 'the same for the real run (e.g. timeouts scaled down); default --policy-options' })
              .option('seed', { type: 'number' })
              .option('load', { type: 'number' })
              .option('scale', { type: 'number' })
              .option('sim', { type: 'boolean', default: true, describe: 'run the simulator (--no-sim to skip)' })
              .option('real', { type: 'boolean', default: false, describe: 'also run on a real local cluster, scaled down' })
              .option('real-workers', { type: 'number', default: 6 })
              .option('real-racks', { type: 'number', default: 3 })
              .option('real-map-slots', { type: 'number', default: 2 })
              .option('real-reduce-slots', { type: 'number', default: 1 })
              .option('real-memory-mb', { type: 'number', default: 2048 })
              .option('real-disk-mbps', { type: 'number', default: 20, describe: 'disk rate the real workers report (scaled with the data)' })
              .option('bytes-per-map', { type: 'string', default: '1m' })
              .option('time-scale', { type: 'number', default: 0.05, describe: 'real ms per workload ms, for arrival times' })
              .option('max-maps-per-job', { type: 'number', default: 48 })
              .option('out', { type: 'string', default: 'bench-results/policies' })
              .option('dir', { type: 'string', default: '.minimr/bench-policies', describe: 'data directory of the real clusters' }),
          async (argv) => {
            const parseJson = (flag: string, text: string | undefined): Record<string, PolicyOptions> | undefined => {
              if (text === undefined) return undefined;
              try {
                const v: unknown = JSON.parse(text);
                if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
                return v as Record<string, PolicyOptions>;
              } catch (err) {
                throw new MinimrError('EBADCONF', `${flag} must be a JSON object of policy name -> options: ${(err as Error).message}`);
              }
            };
            const policyOptions = parseJson('--policy-options', argv['policy-options']);
            const realPolicyOptions = parseJson('--real-policy-options', argv['real-policy-options']);
            const result = await benchPolicies({
              workload: argv.workload,
              ...(argv.cluster !== undefined ? { cluster: argv.cluster } : {}),
              policies: argv.policies.split(',').map((p) => p.trim()).filter(Boolean),
              ...(policyOptions ? { policyOptions } : {}),
              ...(realPolicyOptions ? { realPolicyOptions } : {}),
              ...(argv.seed !== undefined ? { seed: argv.seed } : {}),
              ...(argv.load !== undefined ? { load: argv.load } : {}),
              ...(argv.scale !== undefined ? { scale: argv.scale } : {}),
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
            process.stdout.write(`${await readFileLocal(result.files[result.files.length - 1]!, 'utf8')}\nwritten: ${result.files.join(', ')}\n`);
          },
        )
        .demandCommand(1),
    )
    .demandCommand(1)
    .strict()
    .help()
    .fail((msg, err, y) => {
      if (err) throw err;
      const fromConfig = configPath !== undefined && /^Unknown argument/.test(msg) ? ` (an option in ${configPath}'s "${commandOf(args)}" section or on the command line that this command does not have)` : '';
      process.stderr.write(`${y.help()}\n\n${msg}${fromConfig}\n`);
      process.exit(2);
    })
    .parseAsync();
}

main().catch((err: unknown) => {
  if (err instanceof MinimrError) {
    process.stderr.write(`minimr: ${err.code}: ${escapeControlCharacters(err.message)}\n`);
    process.exit(1);
  }
  process.stderr.write(`minimr: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});


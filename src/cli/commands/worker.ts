/** `minimr worker`: a worker (TaskTracker + DataNode) of a cluster, as a service. */
import { resolve as resolvePath } from 'node:path';
import { MinimrError } from '../../errors.js';
import { THROTTLE_BASES, Worker, type ThrottleBasis } from '../../runtime/index.js';
import { peerSecurity } from '../client.js';
import { defineCommand, jobtrackerOption } from '../options.js';

export const workerCommand = defineCommand({
  command: 'worker',
  describe: 'run a worker (TaskTracker + DataNode)',
  builder: (y) =>
    jobtrackerOption(y)
      .option('dir', { type: 'string', default: '.minimr/worker' })
      .option('id', { type: 'string', describe: 'worker id (default: hostname-pid)' })
      .option('host', {
        type: 'string',
        describe:
          "address others use to reach this worker (default: this machine's address on the route to the JobTracker)",
      })
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
        describe:
          "what --cpu-throttle stretches: 'working' time (a worker F " +
          "times slower than the others) or 'cpu' time (workers each with " +
          'a core of their own, F times slower, not sharing this ' +
          "machine's)",
      })
      .option('attempt-log-max-mb', {
        type: 'number',
        default: 16,
        describe: 'MB of stdout and of stderr kept per attempt (the rest is counted, not kept)',
      })
      .option('log-retain-hours', {
        type: 'number',
        default: 24,
        describe: 'attempt logs of a job are removed this long after its last attempt on this worker started',
      })
      .option('block-report-ms', {
        type: 'number',
        default: 600_000,
        describe: 'time between two full block reports to the NameNode, which makes its map match the disk',
      })
      .option('block-scan-bytes-per-sec', {
        type: 'number',
        default: 1024 * 1024,
        describe: "rate at which the block scanner re-reads this worker's replicas to find corrupt ones (0: off)",
      })
      .option('block-scan-interval-ms', {
        type: 'number',
        default: 600_000,
        describe: 'least time between the starts of two block scanner passes',
      })
      .option('task-user', {
        type: 'string',
        describe:
          "a worker running as root runs each job's tasks as its owner's account when this host has one (uid >= 1000), " +
          'else as this account (default: nobody)',
      })
      .option('spare-process', {
        type: 'boolean',
        default: true,
        describe:
          'keep a task process started ahead of any job, which the next job launched here takes instead of waiting ' +
          'for a fork (~150 ms; one idle process of memory); --no-spare-process to start processes for jobs only',
      }),
  handler: async (argv) => {
    const security = await peerSecurity(argv);
    if (!security.credentials) {
      throw new MinimrError(
        'EAUTH',
        `a worker needs the cluster secret: give the JobTracker's secret file with --secret-file or MINIMR_SECRET_FILE`,
      );
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
      blockReportMs: argv['block-report-ms'],
      blockScanBytesPerSecond: argv['block-scan-bytes-per-sec'],
      blockScanIntervalMs: argv['block-scan-interval-ms'],
      taskUser: argv['task-user'],
      spareProcess: argv['spare-process'],
    });
    await worker.start();
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await worker.stop();
    process.exit(0);
  },
});

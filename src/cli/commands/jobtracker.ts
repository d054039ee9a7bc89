/** `minimr jobtracker`: the master and NameNode of a cluster, as a service. */
import { writeFile } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import { DEFAULT_WORKER_LIMITS } from '../../books/index.js';
import { MinimrError } from '../../errors.js';
import { JobTracker, forgetClusterSecret, reachableAddress, recordClusterSecret } from '../../runtime/index.js';
import { createUiRequestHandler } from '../../ui/index.js';
import { loadPolicyPlugins } from '../../policy-plugins/index.js';
import { createPolicy } from '../../scheduler/index.js';
import { parseSize } from '../../util/index.js';
import { tlsIdentity } from '../client.js';
import { defineCommand, policyOptions, policySettings } from '../options.js';
import { JOIN_URL_FILE } from './join-token.js';

export const jobtrackerCommand = defineCommand({
  command: 'jobtracker',
  describe: 'run a JobTracker (master + NameNode)',
  builder: (y) =>
    policyOptions(
      y
        .option('dir', { type: 'string', default: '.minimr/jobtracker' })
        .option('host', {
          type: 'string',
          default: '127.0.0.1',
          describe: 'address to listen on (loopback only by default; 0.0.0.0 for every interface)',
        })
        .option('admin', {
          type: 'string',
          describe: 'the user who may act on every job and path (default: the OS user running the JobTracker)',
        })
        .option('tls-cert', { type: 'string', describe: 'serve wss:// with this certificate (PEM); needs --tls-key' })
        .option('tls-key', { type: 'string', describe: 'private key of --tls-cert (PEM)' })
        .option('insecure-plaintext', {
          type: 'boolean',
          default: false,
          describe:
            'beyond loopback, serve plain ws:// instead of TLS (block keys and shuffle secrets then cross the network in clear text)',
        })
        .option('block-key-roll-ms', {
          type: 'number',
          describe: 'make a new block token key this often, ms (default 1 hour; the previous key stays valid as long)',
        })
        .option('port', { type: 'number', default: 7700 }),
    )
      .option('heartbeat-ms', { type: 'number', default: 1000 })
      .option('worker-timeout-ms', {
        type: 'number',
        describe: 'a connected worker silent this long is suspect: no new work, ms (default 5 heartbeats)',
      })
      .option('task-expiry-ms', {
        type: 'number',
        describe: "a silent worker's attempts run again elsewhere after this long, ms (default 60 s)",
      })
      .option('datanode-expiry-ms', {
        type: 'number',
        describe: 'a silent worker is lost and its blocks re-replicated after this long, ms (default 10 minutes)',
      })
      .option('audit-log', {
        type: 'string',
        describe:
          'where the audit log goes: one JSON line per operation on a path or a job (default DIR/audit.log; none: no log)',
      })
      .option('max-unauthenticated-connections', {
        type: 'number',
        default: 64,
        describe: 'connections one address may hold before it authenticates; past it, new ones are refused',
      })
      .option('block-size', { type: 'string', default: '64m' })
      .option('replication', { type: 'number', default: 3 })
      .option('max-attempts', { type: 'number', default: 4 })
      .option('speculation', {
        type: 'boolean',
        default: true,
        describe:
          "speculative execution (Hadoop's LATE): backups of slow attempts on fast workers, at most 10% of " +
          'slots; --no-speculation turns it off for jobs that do not set job.speculative',
      })
      .option('memory-step-mb', {
        type: 'number',
        describe: 'elastic grants are whole multiples of this, MB (default 100)',
      })
      .option('retained-jobs', {
        type: 'number',
        default: 100,
        describe: 'ended jobs kept in memory; older ones retire to the history (job list --all)',
      })
      .option('retain-ms', {
        type: 'number',
        default: 3_600_000,
        describe: 'an ended job retires to the history after this long, ms',
      })
      .option('recovery-wait-ms', {
        type: 'number',
        describe:
          'after a restart, how long recovered jobs wait for their ' +
          'workers to register again, ms (default max(10 s, the worker ' +
          'timeout))',
      })
      .option('max-worker-map-slots', {
        type: 'number',
        default: DEFAULT_WORKER_LIMITS.maxMapSlots,
        describe: 'a worker claiming more map slots is refused at registration',
      })
      .option('max-worker-reduce-slots', {
        type: 'number',
        default: DEFAULT_WORKER_LIMITS.maxReduceSlots,
        describe: 'a worker claiming more reduce slots is refused',
      })
      .option('file-root', {
        type: 'string',
        array: true,
        describe:
          'a directory whose files jobs may read as file:// inputs (repeatable; default none: the JobTracker and ' +
          "workers read them with their own rights, not the submitter's)",
      })
      .option('file-output-root', {
        type: 'string',
        array: true,
        describe:
          'a directory where jobs may write file:// outputs (repeatable; default none: the JobTracker commits ' +
          'them, and replaces old ones under --overwrite, with its own rights)',
      })
      .option('max-worker-memory-mb', {
        type: 'number',
        default: DEFAULT_WORKER_LIMITS.maxMemoryMb,
        describe: 'a worker claiming more memory is refused',
      }),
  handler: async (argv) => {
    const { policyOptions, pools } = await policySettings(argv);
    await loadPolicyPlugins([argv.policy], () => policyOptions, 'cluster');
    const limitFlags = ['max-worker-map-slots', 'max-worker-reduce-slots', 'max-worker-memory-mb'] as const;
    for (const flag of limitFlags) {
      const value = argv[flag];
      if (!(Number.isInteger(value) && value > 0))
        throw new MinimrError('EBADCONF', `--${flag} must be a positive integer, got ${value}`);
    }
    const limits = {
      maxMapSlots: argv['max-worker-map-slots'],
      maxReduceSlots: argv['max-worker-reduce-slots'],
      maxMemoryMb: argv['max-worker-memory-mb'],
    };
    const secretFile = argv['secret-file'] ?? process.env.MINIMR_SECRET_FILE;
    const maxUnauthenticated = argv['max-unauthenticated-connections'];
    if (!(Number.isInteger(maxUnauthenticated) && maxUnauthenticated > 0))
      throw new MinimrError(
        'EBADCONF',
        `--max-unauthenticated-connections must be a positive integer, got ${maxUnauthenticated}`,
      );
    const auditLog = argv['audit-log'];
    const jt = new JobTracker({
      retainedJobs: argv['retained-jobs'],
      retainMs: argv['retain-ms'],
      recoveryWaitMs: argv['recovery-wait-ms'],
      dataDir: resolvePath(argv.dir),
      host: argv.host,
      port: argv.port,
      policy: createPolicy(argv.policy, policyOptions, 'cluster'),
      fileRoots: (argv['file-root'] ?? []).map((root) => resolvePath(root)),
      fileOutputRoots: (argv['file-output-root'] ?? []).map((root) => resolvePath(root)),
      pools,
      heartbeatMs: argv['heartbeat-ms'],
      workerTimeoutMs: argv['worker-timeout-ms'],
      taskExpiryMs: argv['task-expiry-ms'],
      datanodeExpiryMs: argv['datanode-expiry-ms'],
      blockSize: parseSize(argv['block-size']),
      replication: argv.replication,
      maxAttempts: argv['max-attempts'],
      speculation: { enabled: argv.speculation },
      memoryStepMb: argv['memory-step-mb'],
      secretFile: secretFile ? resolvePath(secretFile) : undefined,
      admin: argv.admin,
      tls: await tlsIdentity(argv['tls-cert'], argv['tls-key']),
      insecurePlaintext: argv['insecure-plaintext'],
      blockKeyRollMs: argv['block-key-roll-ms'],
      workerLimits: limits,
      auditLog: auditLog === 'none' ? false : auditLog !== undefined ? resolvePath(auditLog) : undefined,
      maxUnauthenticatedPerAddress: maxUnauthenticated,
      // The CLI is the JobTracker's entry point: it plugs the web pages in (the runtime does not import src/ui).
      webPages: createUiRequestHandler,
    });
    await jt.start();
    await recordClusterSecret(jt.url, jt.secretFile).catch(() => undefined);
    // What `minimr join-token` puts in its token: the URL others reach this JobTracker by.
    const joinUrl = jt.url.replace(/\/\/(0\.0\.0\.0|\[::\]|::):/, `//${reachableAddress(argv.host)}:`);
    await writeFile(join(resolvePath(argv.dir), JOIN_URL_FILE), `${joinUrl}\n`);
    process.stderr.write(
      `JobTracker ${jt.url}, admin ${jt.admin}, cluster ` +
        `secret ${jt.secretFile} (workers join with the string \`minimr join-token --dir ${argv.dir}\` prints, ` +
        `or give them the secret file with --secret-file or MINIMR_SECRET_FILE)\n`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await forgetClusterSecret(jt.url);
    await jt.stop();
  },
});

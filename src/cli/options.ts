/**
 * What the command modules in ./commands share: the options several commands take, defined once
 * here so their flags, defaults and help texts cannot drift apart, the parsing of those options'
 * values, and the typed shape of a command module.
 */
import { readFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import type { JsonValue } from '../api/index.js';
import { MinimrError } from '../errors.js';
import { parsePools, policyNames, type PolicyOptions, type PoolView } from '../scheduler/index.js';
import { keyValuePairs } from '../util/index.js';
import { DEFAULT_JOBTRACKER } from './client.js';

/** The options every command takes: how a client proves the cluster secret, and `--config`. */
export interface GlobalOptions {
  'secret-file': string | undefined;
  'credential-file': string | undefined;
  user: string | undefined;
  'tls-ca': string | undefined;
  'join-token': string | undefined;
  config: string | undefined;
}

/** Declares the options of {@link GlobalOptions} on the top-level parser (so every command's help lists them). */
export function globalOptions(y: Argv): Argv<GlobalOptions> {
  return y
    .option('secret-file', {
      type: 'string',
      describe:
        'the cluster secret file (default: $MINIMR_SECRET_FILE; a cluster this user started here is found by itself)',
    })
    .option('credential-file', {
      type: 'string',
      describe:
        'your user credential (`minimr user add` makes it; default: $MINIMR_CREDENTIAL_FILE): ' +
        'you act as the user it names, and no other',
    })
    .option('user', { type: 'string', describe: 'the user to act as (default: $MINIMR_USER, else the OS user)' })
    .option('tls-ca', {
      type: 'string',
      describe: 'certificate authority to trust for a wss:// JobTracker (PEM; default: $MINIMR_TLS_CA)',
    })
    .option('join-token', {
      type: 'string',
      describe:
        'join a cluster with the string `minimr join-token` printed: its JobTracker, secret and the authority ' +
        'to pin (default: $MINIMR_JOIN_TOKEN; prefer the variable, other users can read command lines)',
    })
    .option('config', {
      type: 'string',
      global: true,
      describe: 'JSON file of options by command ({"worker": {"rack": "/r1"}, ...}); flags on the command line win',
    });
}

/** `--jobtracker`: where the JobTracker of a command that talks to a cluster is. */
export function jobtrackerOption<T>(y: Argv<T>): Argv<T & { jobtracker: string }> {
  return y.option('jobtracker', { type: 'string', default: DEFAULT_JOBTRACKER });
}

/** `--policy`, `--policy-options` and `--pools` of a command that runs a JobTracker. */
export function policyOptions<T>(
  y: Argv<T>,
): Argv<T & { policy: string; 'policy-options': string | undefined; pools: string | undefined }> {
  return y
    .option('policy', {
      type: 'string',
      default: 'fifo',
      describe:
        `scheduler policy: ${policyNames().join(', ')}, or a plug-in file (./my-policy.js or .ts; docs/policies.md) ` +
        '(`minimr policies` lists their options)',
    })
    .option('policy-options', { type: 'string', describe: 'policy settings as a JSON object' })
    .option('pools', { type: 'string', describe: 'JSON file listing pools with minimum shares and weights' });
}

/** `--policy-options` (a JSON object) and `--pools` (a JSON file), checked before anything starts. */
export async function policySettings(argv: {
  'policy-options'?: string;
  pools?: string;
}): Promise<{ policyOptions: PolicyOptions; pools: PoolView[] }> {
  let policyOptions: PolicyOptions = {};
  if (argv['policy-options'] !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(argv['policy-options']);
    } catch (err) {
      throw new MinimrError('EBADCONF', `--policy-options is not valid JSON: ${(err as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new MinimrError('EBADCONF', '--policy-options must be a JSON object');
    policyOptions = parsed as PolicyOptions;
  }
  let pools: PoolView[] = [];
  if (argv.pools !== undefined) {
    let text: string;
    try {
      text = await readFile(resolvePath(argv.pools), 'utf8');
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

/** `--param key=value` pairs as job parameters: a value that reads as a number is one. */
export function parseParams(list: readonly string[] | undefined): Record<string, JsonValue> {
  const params: Record<string, JsonValue> = {};
  for (const [key, raw] of keyValuePairs(list, '--param')) {
    params[key] = raw !== '' && !Number.isNaN(Number(raw)) && /^-?\d/.test(raw) ? Number(raw) : raw;
  }
  return params;
}

/**
 * A command module whose handler's arguments are typed by its builder (yargs' `CommandModule`
 * leaves them to be spelled out by hand).
 */
export function defineCommand<U>(module: {
  command: string;
  describe: string;
  builder: (y: Argv<GlobalOptions>) => Argv<U>;
  handler: (argv: ArgumentsCamelCase<U>) => Promise<void>;
}): CommandModule<GlobalOptions, U> {
  return module;
}

/**
 * A command that only groups subcommands (`minimr job status`): its builder declares them, with
 * `demandCommand(1)` so that the group alone is a usage error; it has nothing to do itself.
 */
export function defineGroup<U>(module: {
  command: string;
  describe: string;
  builder: (y: Argv<GlobalOptions>) => Argv<U>;
}): CommandModule<GlobalOptions, U> {
  return { ...module, handler: () => undefined };
}

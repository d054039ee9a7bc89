/**
 * `--config minimr.json`: the options of any command, in a section per command, so a service can
 * be started with one file and no long command line:
 *
 *   { "jobtracker": { "port": 7700, "dir": "/var/lib/minimr/jt", "policy": "fair", "pools": "/etc/minimr/pools.json" },
 *     "worker":     { "join-token": "minimr-join-1....", "rack": "/rack-a", "map-slots": 4 },
 *     "client":     { "join-token": "minimr-join-1...." } }
 *
 * A section holds the options of its command (`local`, `jobtracker`, `worker`, `submit`, `sim`,
 * `profile`, `profiles`, `job`, `fs`, `bench`, `user`, `run`, ...) by their flag names (`map-slots` or `mapSlots`),
 * with the values the flags take (numbers as numbers, `--param k=v` lists as arrays); `client`
 * sets `jobtracker`, `secret-file`, `user`, `tls-ca`, `join-token` and `credential-file` for every command
 * that talks to a cluster. Flags on the command
 * line win over the file. A file that cannot be read, is not JSON, has an unknown section or a value of a
 * wrong type is EBADCONF naming the file and the key; an option the command does not have is
 * refused by the command line parser, as a mistyped flag is.
 */
import { readFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { MinimrError } from '../errors.js';

export const CONFIG_SECTIONS = [
  'local',
  'jobtracker',
  'worker',
  'submit',
  'sim',
  'profile',
  'profiles',
  'job',
  'fs',
  'mrc',
  'web-password',
  'join-token',
  'bench',
  'user',
  'run',
] as const;
/** Commands that talk to a running cluster: the `client` section applies to them. */
const CLIENT_COMMANDS = new Set(['submit', 'profile', 'profiles', 'job', 'fs', 'mrc', 'web-password', 'user']);
/** What every client command takes: where the JobTracker is and how to prove the cluster secret to it. */
const CLIENT_OPTIONS = ['jobtracker', 'secret-file', 'user', 'tls-ca', 'join-token', 'credential-file'];

type ConfigValue = string | number | boolean | ReadonlyArray<string | number>;
export type CommandConfig = Readonly<Record<string, ConfigValue>>;

/** The value of `--config FILE` / `--config=FILE` in raw arguments, if any. */
export function configPathOf(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') break;
    if (a === '--config') {
      const next = args[i + 1];
      if (next === undefined || next.startsWith('--'))
        throw new MinimrError('EBADCONF', '--config takes a file name (e.g. --config minimr.json)');
      return next;
    }
    if (a.startsWith('--config=')) return a.slice('--config='.length);
  }
  return undefined;
}

function checkSection(file: string, name: string, section: unknown): CommandConfig {
  if (typeof section !== 'object' || section === null || Array.isArray(section)) {
    throw new MinimrError(
      'EBADCONF',
      `${file}: "${name}" must be an object of that command's options, e.g. { "port": 7700 }`,
    );
  }
  for (const [key, value] of Object.entries(section)) {
    const ok =
      typeof value === 'string' ||
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value)) ||
      (Array.isArray(value) &&
        value.every((v) => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))));
    if (!ok)
      throw new MinimrError(
        'EBADCONF',
        `${file}: "${name}.${key}" must be a string, a number, ` +
          `true/false or a list of those, got ${JSON.stringify(value)}`,
      );
    if (key === 'config')
      throw new MinimrError('EBADCONF', `${file}: "${name}.config": a config file cannot name another`);
  }
  return section as CommandConfig;
}

/** Reads and checks a config file: its sections by command. */
export async function readConfigFile(path: string): Promise<ReadonlyMap<string, CommandConfig>> {
  const file = resolvePath(path);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new MinimrError('EBADCONF', `cannot read the config file ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new MinimrError('EBADCONF', `the config file ${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new MinimrError('EBADCONF', `the config file ${file} must hold a JSON object of sections by command`);
  const sections = new Map<string, CommandConfig>();
  for (const [name, section] of Object.entries(parsed)) {
    if (name !== 'client' && !(CONFIG_SECTIONS as readonly string[]).includes(name)) {
      throw new MinimrError(
        'EBADCONF',
        `${file}: unknown section "${name}"; sections: ${[...CONFIG_SECTIONS, 'client'].join(', ')}`,
      );
    }
    const checked = checkSection(file, name, section);
    if (name === 'client' && Object.keys(checked).some((k) => !CLIENT_OPTIONS.includes(k))) {
      throw new MinimrError(
        'EBADCONF',
        `${file}: the "client" section holds ` +
          `only ${CLIENT_OPTIONS.map((k) => `"${k}"`).join(', ')} (what ` +
          `every client command uses); put other options in the command's ` +
          `own section`,
      );
    }
    sections.set(name, checked);
  }
  return sections;
}

/** The options the file sets for `command` (the first word of the command line). */
export function configFor(sections: ReadonlyMap<string, CommandConfig>, command: string | undefined): CommandConfig {
  if (command === undefined) return {};
  return { ...(CLIENT_COMMANDS.has(command) ? sections.get('client') : {}), ...sections.get(command) };
}

/** The command word of raw arguments: the first that is not an option or an option's value. */
export function commandOf(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--config') {
      i++;
      continue;
    }
    if (!a.startsWith('-')) return a;
  }
  return undefined;
}

import { createHash, randomUUID } from 'node:crypto';
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { assertOneMapFunction, validateJobDefinition, type AnyJobDefinition } from '../../api/index.js';
import { MinimrError } from '../../errors.js';
import { userStackOf } from './user-stack.js';

/** Root of the running engine's package (the directory holding its package.json). */
const PACKAGE_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** A job module's content hash: workers cache modules by it, and a task process reused by it. */
export function jobModuleHash(source: string): string {
  return createHash('sha1').update(source).digest('hex').slice(0, 16);
}

/** Where `storeJobModule` puts the module of that hash under `cacheDir`. */
export function jobModuleFile(cacheDir: string, hash: string): string {
  return join(cacheDir, `job-${hash}.mjs`);
}

/**
 * Writes the source under `cacheDir` (named by its hash) and returns the file's path. A job is
 * shipped as one file and stored outside this package, where the bare specifier 'minimr' would not
 * resolve; a `node_modules/minimr` link beside it points at the running engine, so a job always
 * runs against the API of the engine that runs it. (A module.register() resolve hook does the same
 * but starts a loader thread in every task process, which cost hundreds of milliseconds a launch.)
 * The file appears whole (written aside, then renamed): another process may be importing it.
 */
export async function storeJobModule(source: string, cacheDir: string): Promise<string> {
  await mkdir(join(cacheDir, 'node_modules'), { recursive: true });
  const link = join(cacheDir, 'node_modules', 'minimr');
  const tmpLink = `${link}.${process.pid}.tmp`;
  try {
    await symlink(PACKAGE_ROOT, tmpLink, 'dir');
    await rename(tmpLink, link);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const file = jobModuleFile(cacheDir, jobModuleHash(source));
  const tmpFile = `${file}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(tmpFile, source);
  await rename(tmpFile, file);
  return file;
}

/**
 * Imports a stored job module and checks that its default export is a job. With `instance`, the
 * module is evaluated afresh under that name even if this process imported it before (a task
 * process that runs several attempts gives each its own module-level state).
 */
export async function importJobModule(file: string, displayName = file, instance?: string): Promise<AnyJobDefinition> {
  let mod: { default?: unknown };
  try {
    const url = pathToFileURL(file);
    if (instance !== undefined) url.searchParams.set('instance', instance);
    mod = (await import(url.href)) as { default?: unknown };
  } catch (err) {
    // defineJob's EBADJOB (both map functions) is a job definition's error, not a loading one. (By
    // name and code: a module loaded through another path to this package has its own class.)
    if ((err as MinimrError)?.name === 'MinimrError' && (err as MinimrError).code === 'EBADJOB')
      throw new MinimrError('EBADJOB', `job module ${displayName}: ${(err as MinimrError).message}`, {
        module: displayName,
      });
    // A module that throws as it loads: where, in the user's files. The stored copy's path (a client's
    // temporary directory, a worker's sandbox) means nothing to the user: it is named as they named it.
    const user = userStackOf(err, file);
    const message = ((err as Error)?.message ?? String(err)).replaceAll(pathToFileURL(file).href, displayName);
    throw new MinimrError(
      'EJOBMODULE',
      `job module ${displayName} does not load: ${message.replaceAll(file, displayName)}` +
        `${user ? ` (at ${user.at})` : ''}`,
      { module: displayName, ...(user ? { at: user.at, stack: user.stack } : {}) },
    );
  }
  assertOneMapFunction(mod.default, `job module ${displayName}`);
  const problems = validateJobDefinition(mod.default);
  if (problems.length > 0) {
    throw new MinimrError('EJOBMODULE', `job module ${displayName} is not a valid job: ${problems.join('; ')}`, {
      module: displayName,
    });
  }
  return mod.default as AnyJobDefinition;
}

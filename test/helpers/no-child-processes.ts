/**
 * Preloaded by the npm test scripts (`node --test --import ./dist/test/helpers/no-child-processes.js`),
 * so the two tiers stay apart as files are added: in a test file outside test/cluster/ (the unit tier),
 * starting any process (fork, spawn, exec of node or of anything else, and so a LocalCluster's
 * workers or a TaskTracker's task processes) throws, naming the file and where it belongs. Files under
 * test/cluster/ are left alone. The test runner's own process is left alone too: it is the one that
 * starts the test files, and only its children have NODE_TEST_CONTEXT set.
 *
 * One process is let through: esbuild's service (its own binary, `--service=VERSION`), which a
 * JobClient starts to bundle a job module on submit (src/runtime/task/job-bundle.ts), as a library's
 * helper rather than a process of the cluster; the unit tests of the JobTracker submit real modules.
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import { sep } from 'node:path';

const testFile = process.argv[1] ?? '';
const inClusterTier = testFile.includes(`${sep}test${sep}cluster${sep}`);

if (process.env.NODE_TEST_CONTEXT !== undefined && !inClusterTier) {
  const original = { ...childProcess } as unknown as Record<string, (...args: unknown[]) => unknown>;
  const isBundlerService = (command: unknown, args: unknown) =>
    typeof command === 'string' &&
    /(^|[\\/])esbuild(\.exe)?$/.test(command) &&
    Array.isArray(args) &&
    args.some((a) => typeof a === 'string' && a.startsWith('--service='));
  const refuse =
    (name: string) =>
    (command: unknown, args: unknown, ...rest: unknown[]) => {
      if (name === 'spawn' && isBundlerService(command, args)) return original.spawn!(command, args, ...rest);
      throw new Error(
        `${testFile} called child_process.${name}: a unit test starts no processes. ` +
          'Move the test that needs one to test/cluster/ (run by npm run test:cluster).',
      );
    };
  const starters = ['spawn', 'spawnSync', 'fork', 'exec', 'execSync', 'execFile', 'execFileSync'] as const;
  const writable = childProcess as unknown as Record<string, unknown>;
  for (const name of starters) writable[name] = refuse(name);
  // Named imports (`import { fork } from 'node:child_process'`) read the ESM view, updated here.
  syncBuiltinESMExports();
}

/**
 * Preloaded by the npm test scripts (`node --test --import ./dist/test/helpers/no-child-processes.js`),
 * so the two tiers stay apart as files are added: in a test file outside test/cluster/ (the unit tier),
 * starting any process (fork, spawn, exec of node or of anything else, and so a LocalCluster's
 * workers or a TaskTracker's task processes) throws, naming the file and where it belongs. Files under
 * test/cluster/ are left alone. The test runner's own process is left alone too: it is the one that
 * starts the test files, and only its children have NODE_TEST_CONTEXT set.
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import { sep } from 'node:path';

const testFile = process.argv[1] ?? '';
const inClusterTier = testFile.includes(`${sep}test${sep}cluster${sep}`);

if (process.env.NODE_TEST_CONTEXT !== undefined && !inClusterTier) {
  const refuse = (name: string) => () => {
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

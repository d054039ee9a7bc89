import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { MINIMR_BIN as BIN } from '../helpers/cli.js';

const execFileP = promisify(execFile);

// `minimr sim` as a process; runSimCommand in-process is in test/sim/command.test.ts.
describe('minimr sim', () => {
  test('the CLI prints the metrics table on stdout and progress on stderr', async () => {
    const { stdout, stderr } = await execFileP(
      process.execPath,
      [BIN, 'sim', '--workload', 'improved-fair', '--policy', 'fifo', '--seed', '2'],
      { timeout: 120_000 },
    );
    assert.match(stdout, /\| fifo \| 3\/3 \|/);
    assert.match(stderr, /cluster improved-fair-12: 12 workers/);
  });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);
const BIN = fileURLToPath(new URL('../../../bin/minimr.js', import.meta.url));

// `minimr sim` as a process; runSimCommand in-process is in test/sim/command.test.ts.
describe('minimr sim', () => {
  test('the CLI prints the metrics table on stdout and progress on stderr', async () => {
    const { stdout, stderr } = await execFileP(process.execPath, [BIN, 'sim', '--workload', 'improved-fair', '--policy', 'fifo', '--seed', '2'], { timeout: 120_000 });
    assert.match(stdout, /\| fifo \| 3\/3 \|/);
    assert.match(stderr, /cluster improved-fair-12: 12 workers/);
  });
});

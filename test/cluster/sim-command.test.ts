import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  test('swim:FILE with --scale and --swim-options; a malformed line exits with EBADCONF naming it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'minimr-sim-swim-'));
    try {
      const trace = join(dir, 'fb.tsv');
      await writeFile(trace, 'job0\t49\t49\t740773\t2339561\t627471\njob1\t101\t52\t5368709120\t0\t1000\n');
      const args = ['sim', '--workload', `swim:${trace}`, '--policy', 'fair', '--scale', '0.5'];
      const { stdout } = await execFileP(process.execPath, [BIN, ...args, '--swim-options', '{"timeScale": 0.1}'], {
        timeout: 120_000,
      });
      assert.match(stdout, /\| fair \| 2\/2 \|/);
      await writeFile(trace, 'job0\t49\t49\t740773\t2339561\t627471\njob1\t101\t52\t5e9\t-3\t1000\n');
      await assert.rejects(execFileP(process.execPath, [BIN, ...args], { timeout: 120_000 }), (err: unknown) => {
        const stderr = String((err as { stderr?: unknown }).stderr);
        assert.match(stderr, /EBADCONF/);
        assert.match(stderr, /line 2: shuffle bytes: expected a number >= 0, got "-3"/);
        return true;
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { taskProcessEntry } from '../../src/runtime/task/task-process-entry.js';

describe('taskProcessEntry: the bundle only while it is as new as every module it was built from', () => {
  let dir: string;
  let runtime: string;
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-entry-'));
    runtime = join(dir, 'runtime');
    await mkdir(runtime);
    await mkdir(join(dir, 'shuffle'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A build: the modules written at second 0, the bundle and its list of inputs at `bundleAt`. */
  async function build(bundleAt: number, inputs: unknown = ['task-process.js', '../shuffle/merger.js']): Promise<void> {
    for (const f of [join(runtime, 'task-process.js'), join(dir, 'shuffle', 'merger.js')]) {
      await writeFile(f, '');
      await utimes(f, at(0), at(0));
    }
    await writeFile(join(runtime, 'task-process.bundle.json'), JSON.stringify({ inputs }));
    await writeFile(join(runtime, 'task-process.bundle.js'), '');
    await utimes(join(runtime, 'task-process.bundle.js'), at(bundleAt), at(bundleAt));
  }
  const modules = () => join(runtime, 'task-process.js');
  const bundle = () => join(runtime, 'task-process.bundle.js');

  it('forks the bundle built after its modules', async () => {
    await build(1);
    assert.equal(taskProcessEntry(runtime, {}), bundle());
  });

  it('forks the modules once any of them is newer than the bundle (tsc ran since)', async () => {
    await build(1);
    await utimes(join(dir, 'shuffle', 'merger.js'), at(2), at(2));
    assert.equal(taskProcessEntry(runtime, {}), modules());
  });

  it(
    'forks the modules when there is no bundle, no list of inputs, ' +
      'an empty or bad list, or a listed module is gone',
    async () => {
      await build(1);
      await rm(bundle());
      assert.equal(taskProcessEntry(runtime, {}), modules(), 'no bundle');
      await build(1);
      await rm(join(runtime, 'task-process.bundle.json'));
      assert.equal(taskProcessEntry(runtime, {}), modules(), 'no list');
      for (const inputs of [[], 'task-process.js', [7], ['../gone.js']]) {
        await build(1, inputs);
        assert.equal(taskProcessEntry(runtime, {}), modules(), JSON.stringify(inputs));
      }
    },
  );

  it('forks the modules when MINIMR_TASK_BUNDLE=0', async () => {
    await build(1);
    assert.equal(taskProcessEntry(runtime, { MINIMR_TASK_BUNDLE: '0' }), modules());
    assert.equal(taskProcessEntry(runtime, { MINIMR_TASK_BUNDLE: '1' }), bundle());
  });
});

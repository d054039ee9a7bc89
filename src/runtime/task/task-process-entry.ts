import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Which file a worker forks for a task process. `npm run build` bundles task-process.js and the
 * modules it imports into task-process.bundle.js (scripts/bundle-task-process.mjs): one file to load
 * instead of ~65 saves each fresh task process ~45 ms of CPU. The bundle is used only while it is
 * at least as new as every module it was built from: after a bare `tsc` it would run the old code,
 * so the modules tsc wrote are forked instead. `MINIMR_TASK_BUNDLE=0` forks the modules anyway (CPU
 * profiles of task processes then name the real files).
 */
export function taskProcessEntry(runtimeDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const modules = join(runtimeDir, 'task-process.js');
  if (env.MINIMR_TASK_BUNDLE === '0') return modules;
  const bundle = join(runtimeDir, 'task-process.bundle.js');
  try {
    const { inputs } = JSON.parse(readFileSync(join(runtimeDir, 'task-process.bundle.json'), 'utf8')) as {
      inputs: unknown;
    };
    if (!Array.isArray(inputs) || inputs.length === 0) return modules;
    const builtMs = statSync(bundle).mtimeMs;
    for (const input of inputs) {
      if (typeof input !== 'string' || statSync(join(runtimeDir, input)).mtimeMs > builtMs) return modules;
    }
    return bundle;
  } catch {
    // No bundle (built by tsc alone), or a module it lists is gone: the modules are what tsc wrote.
    return modules;
  }
}

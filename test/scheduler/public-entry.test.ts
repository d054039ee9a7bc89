/**
 * `minimr/scheduler` is the public policy API (issue 38): a plug-in imports it, and it must stay pure.
 * Its module graph, followed from the built entry through every static and dynamic import, holds no
 * engine module outside the scheduler's pure dependencies (no runtime, storage, shuffle, simulator) and
 * no Node module that does I/O, so a policy cannot reach a socket, a file or a clock through it.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Every import specifier of a built ES module (static `from '...'`, bare `import '...'` and `import('...')`). */
function importsOf(source: string): string[] {
  const found: string[] = [];
  const statements =
    /^(?:import|export)\b[^;]*?\bfrom\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]/gm;
  for (const m of source.matchAll(statements)) found.push((m[1] ?? m[2] ?? m[3])!);
  return found;
}

test('minimr/scheduler imports only pure modules', async () => {
  const pkg = JSON.parse(await readFile(resolve(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, { default: string }>;
  };
  const entry = resolve(ROOT, pkg.exports['./scheduler']!.default);
  const seen = new Set<string>();
  const external = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of importsOf(await readFile(file, 'utf8'))) {
      if (spec.startsWith('.')) queue.push(resolve(dirname(file), spec));
      else external.add(spec);
    }
  }
  const modules = [...seen].map((f) => relative(resolve(ROOT, 'dist/src'), f)).sort();
  const allowedFolders = ['scheduler/', 'books/', 'util/'];
  const allowedFiles = ['errors.js'];
  const outside = modules.filter((m) => !allowedFiles.includes(m) && !allowedFolders.some((f) => m.startsWith(f)));
  assert.deepEqual(outside, [], `modules of the public policy API outside its pure folders: ${outside.join(', ')}`);
  const io = [...external].filter((s) => !['node:util', 'node:assert', 'node:crypto'].includes(s));
  assert.deepEqual(io, [], `Node or npm modules reached from minimr/scheduler: ${io.join(', ')}`);
  assert.ok(modules.includes('scheduler/index.js') && modules.length > 5, modules.join(', '));
});

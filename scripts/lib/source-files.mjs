// The source files the formatter, the linter and the line-length check look at: one walker for
// check-line-length.mjs, reflow-comments.mjs and same-program.mjs.
import { readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';

export const FOLDERS = ['src', 'test', 'benchmarks', 'apps', 'scripts', 'bin'];
export const EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.git']);

/** Every source file at or below `path`, in name order. */
export function* sourceFiles(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return;
  if (stat.isFile()) {
    if (EXTENSIONS.has(extname(path))) yield path;
    return;
  }
  if (!stat.isDirectory()) return;
  for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.isDirectory() && SKIPPED_DIRS.has(entry.name)) continue;
    yield* sourceFiles(join(path, entry.name));
  }
}

// Bundles the task process's entry (dist/src/runtime/task/task-process.js, as tsc wrote it) and the
// ~65 modules it imports into one file beside it, dist/src/runtime/task/task-process.bundle.js, which
// workers fork instead (src/runtime/task/task-process-entry.ts says when). Node's ESM loader resolves,
// reads and links each module separately: loading the 67 files cost a fresh task process ~45 ms of
// CPU of its ~145 ms start-up, one file about 5, and a 1 GB TeraSort starts 18 task processes.
//
// The modules a job module reaches through `import ... from 'minimr'` (the public API and
// MinimrError) stay outside the bundle, imported from their own files, so the task process and the
// job share one copy of them: one MinimrError class for `instanceof`, one set of codecs. Packages
// (lz4-napi, loaded at run time) stay outside too, and so do the modules the task process imports only
// when a job needs them (the s3:// store, with the AWS SDK): in the bundle, esbuild would hoist their
// packages' imports to its top and load them in every task process.
//
// Writes task-process.bundle.json beside the bundle: the files it was built from, for the staleness
// check. Run after tsc (`npm run build` does both).
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const runtimeDir = resolve(root, 'dist/src/runtime/task');
const entry = resolve(runtimeDir, 'task-process.js');
const outfile = resolve(runtimeDir, 'task-process.bundle.js');

/** Every module of the public API's graph: what a job module may import through 'minimr'. */
async function publicApiModules() {
  const { metafile } = await build({
    entryPoints: [resolve(root, 'dist/src/index.js')],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
  });
  return new Set(Object.keys(metafile.inputs).map((p) => resolve(root, p)));
}

const shared = await publicApiModules();
/** Modules loaded by `await import()` only when needed (see the file's top). */
const lazy = new Set([resolve(root, 'dist/src/storage/stores/s3-store.js')]);
const keepSharedOutside = {
  name: 'keep-public-api-outside',
  setup(b) {
    b.onResolve({ filter: /^\./ }, (args) => {
      const target = resolve(args.resolveDir, args.path);
      if (!shared.has(target) && !lazy.has(target)) return undefined;
      // Imported by the bundle, which sits in runtimeDir, from the same file the job's 'minimr' loads.
      const path = relative(runtimeDir, target).split('\\').join('/');
      return { path: path.startsWith('.') ? path : `./${path}`, external: true };
    });
  },
};

/**
 * Packages stay outside (see the file's top), but for TypeBox (the wire's validators): pure ESM in
 * ~300 small files, whose resolving and loading was ~90 ms of CPU of a fresh task process's ~170.
 */
const BUNDLED_PACKAGES = /^@sinclair\/typebox(\/|$)/;
const otherPackagesOutside = {
  name: 'other-packages-outside',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      BUNDLED_PACKAGES.test(args.path) || args.path.startsWith('node:')
        ? undefined
        : { path: args.path, external: true },
    );
  },
};

const { metafile } = await build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  plugins: [keepSharedOutside, otherPackagesOutside],
  metafile: true,
  logLevel: 'warning',
});
const inputs = Object.keys(metafile.inputs).map((p) => relative(runtimeDir, resolve(root, p)).split('\\').join('/'));
writeFileSync(resolve(runtimeDir, 'task-process.bundle.json'), `${JSON.stringify({ inputs }, null, 1)}\n`);
console.log(
  `bundled ${inputs.length} modules into ${relative(root, outfile)} (${shared.size} public API modules left outside)`,
);

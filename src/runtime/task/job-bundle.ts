/**
 * What a submitted job module becomes before it ships: one ES module bundling the job file with the
 * helper files and npm packages it imports, as esbuild resolves them from the job file's own
 * directory (TypeScript included: transpiled, not type-checked). 'minimr' and Node's built-ins stay
 * imports: a job runs against the engine that runs it (job-loader.ts's storeJobModule links
 * node_modules/minimr beside the stored bundle). The bundle is what workers fetch and cache by its
 * content hash.
 *
 * Its inline source map names each source by its path relative to the job file's directory
 * (`wordcount.js`, `lib/words.js`, `node_modules/some-pkg/index.js`), so the bundle does not depend
 * on where the job was submitted from, and user-stack.ts shows a failing attempt's frames at those
 * names, lines and columns.
 */
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { Message, Plugin } from 'esbuild';
import { MinimrError } from '../../errors.js';
import { UNBUNDLABLE } from './user-stack.js';

/**
 * The largest bundle a client ships: it travels in one submission frame, whose limit is 16 MiB
 * (wire/frames.ts MAX_FRAME_BYTES), and is fetched whole by every worker that runs the job.
 */
export const MAX_JOB_BUNDLE_BYTES = 12 * 1024 * 1024;

/** Put before the bundle: a CommonJS package's `require('node:fs')` needs a `require` in an ES module. */
const REQUIRE_SHIM =
  "import { createRequire as __minimrCreateRequire } from 'node:module';\n" +
  'const require = __minimrCreateRequire(import.meta.url);';

/** Dependencies through which a package loads native code it built or downloaded. */
const NATIVE_LOADERS = [
  'bindings',
  'node-gyp-build',
  'node-gyp-build-optional-packages',
  'prebuild-install',
  'node-pre-gyp',
  '@mapbox/node-pre-gyp',
];

/** The directory of the package holding `file` (below its last node_modules), or undefined outside any package. */
function packageRootOf(file: string): { root: string; name: string } | undefined {
  const marker = `${sep}node_modules${sep}`;
  const at = file.lastIndexOf(marker);
  if (at < 0) return undefined;
  const parts = file.slice(at + marker.length).split(sep);
  const nameParts = parts[0]?.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1);
  return { root: file.slice(0, at + marker.length) + nameParts.join(sep), name: nameParts.join('/') };
}

/** Why the package at `root` cannot travel in a JavaScript bundle, or undefined when it can. */
async function nativeReason(root: string): Promise<string | undefined> {
  let pkg: Record<string, unknown> = {};
  try {
    pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    // no readable package.json: judged by its files alone
  }
  if (pkg.gypfile === true) return 'it builds a native addon (its package.json says gypfile)';
  const hasGypFile = await stat(join(root, 'binding.gyp')).then(Boolean, () => false);
  if (hasGypFile) return 'it builds a native addon (binding.gyp)';
  if (pkg.napi !== undefined) return 'it is a native addon built with napi-rs';
  const deps = { ...(pkg.dependencies as object), ...(pkg.optionalDependencies as object) };
  const loader = NATIVE_LOADERS.find((d) => Object.hasOwn(deps, d));
  if (loader) return `it loads a native addon through ${loader}`;
  return undefined;
}

const WHY_NO_NATIVE =
  'a job ships as one JavaScript bundle, so native code (.node files) cannot travel with it: ' +
  'use a pure-JavaScript package instead';

/** Refuses native addons with a reason, where they are imported, instead of a bundle that fails on the workers. */
function refuseNativeAddons(): Plugin {
  const checked = new Map<string, Promise<string | undefined>>();
  const resolving = Symbol('resolving');
  return {
    name: 'minimr-refuse-native-addons',
    setup(b) {
      b.onLoad({ filter: /.*/, namespace: UNBUNDLABLE }, (args) => ({
        contents: `throw Object.assign(new Error(${JSON.stringify(args.pluginData)}), { code: 'MODULE_NOT_FOUND' });`,
        loader: 'js',
      }));
      b.onResolve({ filter: /\.node$/ }, (args) => {
        const refusal = `native addon "${args.path}" cannot be bundled: ${WHY_NO_NATIVE}`;
        // As for a native package (below): a package's require() of one may be optional.
        if (args.kind !== 'import-statement' && packageRootOf(args.importer) !== undefined)
          return { path: args.path, namespace: UNBUNDLABLE, pluginData: refusal };
        return { errors: [{ text: refusal }] };
      });
      // Bare specifiers: the package they resolve to, checked before any of its files is read.
      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === resolving || args.path.startsWith('node:') || /^minimr(\/|$)/.test(args.path))
          return undefined;
        const found = await b.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: resolving,
        });
        if (found.errors.length > 0 || found.external || found.path === '') return undefined;
        const pkg = packageRootOf(found.path);
        if (pkg) {
          let reason = checked.get(pkg.root);
          if (!reason) checked.set(pkg.root, (reason = nativeReason(pkg.root)));
          const why = await reason;
          const refusal = why && `package "${pkg.name}" cannot be bundled: ${why}; ${WHY_NO_NATIVE}`;
          // A package's require() of an addon is most often optional, in a try block with a JavaScript
          // fallback (msgpackr's msgpackr-extract, ws's bufferutil): it gets a module that throws as it
          // is required, as a missing one would, and the fallback runs. One that is not optional throws
          // as the client loads the bundle, at submit.
          if (refusal && args.kind !== 'import-statement' && packageRootOf(args.importer) !== undefined)
            return { path: pkg.name, namespace: UNBUNDLABLE, pluginData: refusal };
          if (refusal) return { errors: [{ text: refusal }] };
        }
        return {
          path: found.path,
          namespace: found.namespace,
          sideEffects: found.sideEffects,
          ...(found.suffix ? { suffix: found.suffix } : {}),
        };
      });
    },
  };
}

/** `file:line:col` of an esbuild message (1-based column), relative to the job's directory. */
function whereOf(m: Message): string | undefined {
  const l = m.location;
  return l ? `${l.file}:${l.line}:${l.column + 1}` : undefined;
}

/** The first error esbuild reported, as the EJOBMODULE a user reads. */
function bundleError(name: string, path: string, errors: readonly Message[]): MinimrError {
  const first = errors[0]!;
  const where = whereOf(first);
  const loc = first.location;
  const details = {
    module: name,
    ...(loc ? { file: loc.file, line: loc.line, column: loc.column + 1 } : {}),
  };
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more error${errors.length > 2 ? 's' : ''})` : '';
  const unresolved = /^Could not resolve "(.*)"$/.exec(first.text);
  if (unresolved) {
    const specifier = unresolved[1]!;
    const hint = /^[./]/.test(specifier)
      ? 'no such file next to the importing file'
      : `no package "${specifier}" in a node_modules directory at or above ${dirname(path)}: npm install it there`;
    return new MinimrError(
      'EJOBMODULE',
      `job module ${name} does not load: import "${specifier}"${where ? ` at ${where}` : ''} does not resolve ` +
        `(${hint})${more}`,
      { ...details, specifier },
    );
  }
  const text = first.text.replace(/^No loader is configured for "\.node" files: /, 'native addon ');
  return new MinimrError('EJOBMODULE', `job module ${name} does not load: ${where ? `${where}: ` : ''}${text}${more}`, {
    ...details,
  });
}

/**
 * Bundles the job module at `path` and returns the JavaScript that will be shipped to the workers,
 * with `name` (the file's name) to show in messages. A module that does not parse, an import that
 * does not resolve and a native addon are EJOBMODULE naming the file, line and column, here at
 * submit, before any task runs.
 */
export async function readJobModuleSource(path: string): Promise<{ name: string; source: string }> {
  const name = basename(path);
  const entry = resolve(path);
  try {
    if (!(await stat(entry)).isFile()) throw new Error('not a file');
  } catch (err) {
    throw new MinimrError('EJOBMODULE', `cannot read job module ${path}: ${(err as Error).message}`, { path });
  }
  const jobDir = dirname(entry);
  // Loaded here only: the engine's other processes (workers, task processes) never bundle.
  const { build } = await import('esbuild');
  let text: string;
  try {
    const result = await build({
      entryPoints: [entry],
      // Never written (write: false): it places the source map's paths relative to the job's directory.
      outfile: join(jobDir, `${name}.minimr-bundle.mjs`),
      absWorkingDir: jobDir,
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      external: ['minimr', 'minimr/*'],
      sourcemap: 'inline',
      sourcesContent: false,
      banner: { js: REQUIRE_SHIM },
      plugins: [refuseNativeAddons()],
      logLevel: 'silent',
    });
    text = result.outputFiles[0]!.text;
  } catch (err) {
    const errors = (err as { errors?: Message[] }).errors;
    if (Array.isArray(errors) && errors.length > 0) throw bundleError(name, path, errors);
    throw new MinimrError('EJOBMODULE', `job module ${name} does not load: ${(err as Error).message}`, {
      module: name,
    });
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_JOB_BUNDLE_BYTES)
    throw new MinimrError(
      'EJOBMODULE',
      `job module ${name} bundles to ${(bytes / 1048576).toFixed(1)} MiB with what it imports, over the ` +
        `${MAX_JOB_BUNDLE_BYTES / 1048576} MiB a job may ship: import less (a package's subpath, not all of it)`,
      { module: name, bytes },
    );
  return { name, source: text };
}

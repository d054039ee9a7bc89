/**
 * Policy plug-ins: `--policy ./my-policy.ts` loads a file whose default export is a policy definition
 * (`definePolicy` from 'minimr/scheduler', the shape the built-ins have) and registers it under the name
 * given, so `createPolicy('./my-policy.ts')` makes it in the simulator and on the JobTracker alike.
 *
 * The file is bundled as a job module is (esbuild: its helper files and npm packages, TypeScript
 * transpiled), except that 'minimr/scheduler' and 'minimr' are pointed at the engine running it, so a
 * plug-in's `instanceof` and shared helpers are the engine's own; the bundle is imported from memory (a
 * data: URL). This lives outside src/scheduler because it does I/O: the public `minimr/scheduler` entry
 * stays pure.
 *
 * Loading is async, so every command that takes `--policy` calls `loadPolicyPlugins` with the names it
 * was given before any run starts; a file that does not load, has no default export, or whose export is
 * not a definition whose policies have `schedule` is EBADCONF naming the file and what is wrong.
 */
import { stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import type { Message, Plugin } from 'esbuild';
import { MinimrError } from '../errors.js';
import {
  checkConformance,
  checkPolicies,
  conformanceLines,
  isPolicyFileName,
  type ConformanceRule,
  registerPolicyPlugin,
  type PolicyDefinition,
  type PolicyEngine,
  type PolicyOptions,
} from '../scheduler/index.js';

/** The engine's own modules a plug-in's imports of 'minimr/scheduler' and 'minimr' resolve to. */
const ENGINE_MODULES: Readonly<Record<string, string>> = {
  'minimr/scheduler': new URL('../scheduler/index.js', import.meta.url).href,
  minimr: new URL('../index.js', import.meta.url).href,
};

function refused(file: string, problem: string, details: Record<string, string | number> = {}): MinimrError {
  return new MinimrError('EBADCONF', `policy plug-in ${file}: ${problem}`, { policy: file, ...details });
}

/** Points 'minimr/scheduler' and 'minimr' at the running engine; other 'minimr/...' paths are not public. */
function engineImports(): Plugin {
  return {
    name: 'minimr-policy-engine-imports',
    setup(b) {
      b.onResolve({ filter: /^minimr(\/.*)?$/ }, (args) => {
        const target = ENGINE_MODULES[args.path];
        if (target) return { path: target, external: true };
        return { errors: [{ text: `"${args.path}" is not public: a policy imports 'minimr/scheduler'` }] };
      });
    },
  };
}

function firstError(errors: readonly Message[]): string {
  const m = errors[0]!;
  const l = m.location;
  const where = l ? `${l.file}:${l.line}:${l.column + 1}: ` : '';
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  return `${where}${m.text}${more}`;
}

/** The bundled JavaScript of the plug-in at `file`. */
async function bundle(file: string): Promise<string> {
  const entry = resolve(file);
  try {
    if (!(await stat(entry)).isFile()) throw new Error('not a file');
  } catch (err) {
    throw refused(file, `cannot read it: ${(err as Error).message}`);
  }
  const { build } = await import('esbuild');
  try {
    const result = await build({
      entryPoints: [entry],
      absWorkingDir: dirname(entry),
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      banner: {
        js:
          "import { createRequire as __minimrCreateRequire } from 'node:module';\n" +
          // Imported from a data: URL, the bundle has no file URL of its own: require() from the plug-in's file.
          `const require = __minimrCreateRequire(${JSON.stringify(entry)});`,
      },
      plugins: [engineImports()],
      logLevel: 'silent',
    });
    return result.outputFiles[0]!.text;
  } catch (err) {
    const errors = (err as { errors?: Message[] }).errors;
    const why = Array.isArray(errors) && errors.length > 0 ? firstError(errors) : (err as Error).message;
    throw refused(file, `does not load: ${why}`);
  }
}

/** What is wrong with a module's default export as a policy definition, or undefined when it is one. */
function definitionProblem(exported: unknown): string | undefined {
  if (exported === undefined)
    return 'it has no default export: export default definePolicy({ name, summary, options, defaults, create })';
  if (typeof exported !== 'object' || exported === null)
    return `its default export is a ${typeof exported}, not a policy definition`;
  const d = exported as Record<string, unknown>;
  if (typeof d.name !== 'string' || d.name === '') return 'its default export has no name';
  if (typeof d.create !== 'function') return 'its default export has no create(options) function';
  if (typeof d.options !== 'object' || d.options === null) return 'its default export has no options (use {} for none)';
  if (typeof d.defaults !== 'object' || d.defaults === null)
    return 'its default export has no defaults (use {} for none)';
  return undefined;
}

/**
 * Loads the plug-in at `file`, checks that its default export is a policy definition whose policies
 * have `schedule` (its decide function), and registers it under `file`. EBADCONF naming the file and
 * what is wrong otherwise.
 */
export async function loadPolicyPlugin(file: string): Promise<PolicyDefinition> {
  const source = await bundle(file);
  let module: { default?: unknown };
  try {
    module = (await import(`data:text/javascript;base64,${Buffer.from(source).toString('base64')}`)) as {
      default?: unknown;
    };
  } catch (err) {
    throw refused(file, `does not load: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
  }
  const problem = definitionProblem(module.default);
  if (problem) throw refused(file, problem);
  const exported = module.default as PolicyDefinition;
  // A policy made with its defaults must have schedule (its decide function). A definition whose create
  // needs options (it throws without them) is judged when it is created with the options it is given.
  let probe: unknown;
  try {
    probe = exported.create({});
  } catch {
    probe = undefined;
  }
  if (
    probe !== undefined &&
    (typeof probe !== 'object' || probe === null || typeof (probe as { schedule?: unknown }).schedule !== 'function')
  )
    throw refused(file, 'its create() returns no policy with a schedule(snapshot) method (the decide function)');
  const definition: PolicyDefinition = {
    name: exported.name,
    summary: typeof exported.summary === 'string' ? exported.summary : `plug-in ${basename(file)}`,
    options: exported.options,
    defaults: exported.defaults,
    ...(exported.clusterDefaults ? { clusterDefaults: exported.clusterDefaults } : {}),
    create: (options) => {
      const policy: unknown = exported.create(options);
      if (
        typeof policy !== 'object' ||
        policy === null ||
        typeof (policy as { schedule?: unknown }).schedule !== 'function'
      )
        throw refused(file, 'its create() returns no policy with a schedule(snapshot) method (the decide function)');
      return policy as ReturnType<PolicyDefinition['create']>;
    },
  };
  registerPolicyPlugin(file, definition);
  return definition;
}

/**
 * Rules a plug-in must keep to be loaded for a run: all but `uses-idle-cluster`, which judges how
 * useful a policy is (a deliberately idle one may be an experiment), not whether it is safe to run.
 */
const RULES_AT_LOAD = (rule: ConformanceRule): boolean => rule !== 'uses-idle-cluster';

/**
 * Loads every plug-in among `names` (the others are built-ins), runs the conformance suite on each
 * with its options (a plug-in that throws, answers malformed or invalid decisions, reads the clock,
 * changes its snapshot or is not deterministic there is EBADCONF naming the rules and decisions, as
 * `minimr policy check` prints them), then checks every name with its options (`checkPolicies`): the
 * step each command runs before any run starts.
 */
export async function loadPolicyPlugins(
  names: readonly string[],
  optionsOf: (name: string) => PolicyOptions = () => ({}),
  engine: PolicyEngine = 'simulator',
): Promise<void> {
  for (const name of new Set(names)) {
    if (!isPolicyFileName(name)) continue;
    const definition = await loadPolicyPlugin(name);
    const report = checkConformance(definition, optionsOf(name));
    const broken = report.violations.filter((v) => RULES_AT_LOAD(v.rule));
    if (broken.length > 0)
      throw refused(
        name,
        `breaks the policy contract (minimr policy check ${name} prints it all): ` +
          conformanceLines({ ...report, violations: broken }).join(' | '),
        { rule: broken[0]!.rule },
      );
  }
  checkPolicies(names, optionsOf, engine);
}

/**
 * The one parser of policy options (`--policy-options`, `createPolicy(name, options)`). Each policy
 * declares the options it takes: the type of each, the values it allows, its default and what it
 * does (a `PolicyDefinition`). The parser checks what it is given against the declarations, so a
 * misspelt option or a value out of range stops a run before it starts, with EBADCONF naming the
 * policy and the option and saying what is allowed, instead of silently running another experiment;
 * the registry's help text (index.ts) is written from the same declarations, so it cannot drift.
 */
import { MinimrError } from '../errors.js';
import type { Policy } from './types.js';

/** Options for a policy given by name, as a user or a test writes them: unchecked until parsed. */
export type PolicyOptions = Readonly<Record<string, unknown>>;

/** What a checked option may hold. */
export type OptionValue = boolean | number | string | readonly number[];

/** The numbers an option allows (each number of a list option); every number must also be finite. */
export interface NumberRange {
  readonly min?: number;
  /** `min` itself is not allowed: above it, not at least it. */
  readonly minExclusive?: boolean;
  readonly max?: number;
  readonly maxExclusive?: boolean;
  /** Whole numbers only. */
  readonly integer?: boolean;
  /** The numbers are durations in milliseconds (said in messages and in the help text). */
  readonly unit?: 'ms';
}

export type BooleanOption = { readonly type: 'boolean' };
export type NumberOption = { readonly type: 'number'; readonly range: NumberRange };
/** One of `choices`, written in any case; the parsed value is spelt as in `choices`. */
export type ChoiceOption = { readonly type: 'choice'; readonly choices: readonly string[] };
/** A list of at least `minItems` (default 1) numbers, each in `range`. */
export type NumbersOption = { readonly type: 'numbers'; readonly range: NumberRange; readonly minItems?: number };

/**
 * One option as a policy declares it: what values it takes, and what it does (one sentence or two, for the help text).
 */
export type OptionSpec = (BooleanOption | NumberOption | ChoiceOption | NumbersOption) & { readonly about: string };

type SpecFor<V> = V extends boolean
  ? BooleanOption
  : V extends number
    ? NumberOption
    : V extends string
      ? ChoiceOption
      : V extends readonly number[]
        ? NumbersOption
        : never;

/** A declaration for every option of `O`, of the kind its type needs. */
export type OptionSpecs<O> = { readonly [K in keyof O]-?: SpecFor<NonNullable<O[K]>> & { readonly about: string } };

/**
 * A policy as the registry knows it: its name, what it does, its options and their defaults, and
 * how to make one. `create` checks the options (EBADCONF) and returns a fresh policy object.
 */
export interface PolicyDefinition {
  readonly name: string;
  /** What it does, in a sentence, for the help text. */
  readonly summary: string;
  /** Every option it takes, by name, in the order the help text lists them. */
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Each option's value when not given; an option missing here has none (`create` says when it is needed). */
  readonly defaults: Readonly<Record<string, OptionValue>>;
  /**
   * Defaults that differ on a real cluster (`createPolicy`'s 'cluster' engine): the JobTracker lacks
   * something the policy models by default in the simulator (YARN's ApplicationMasters).
   */
  readonly clusterDefaults?: Readonly<Record<string, OptionValue>>;
  create(options?: PolicyOptions): Policy;
}

/** Where a policy runs: the discrete-event simulator, or a real cluster's JobTracker. */
export type PolicyEngine = 'simulator' | 'cluster';

/** Typed specs as the registry holds them: their keys are the option names. */
function byName<O>(specs: OptionSpecs<O>): Readonly<Record<string, OptionSpec>> {
  return specs as unknown as Readonly<Record<string, OptionSpec>>;
}

/**
 * A definition whose options are checked against the options type `O` at compile time: every
 * option of `O` is declared, with a spec of the kind its type needs.
 */
export function definePolicy<O extends { readonly [K in keyof O]: OptionValue | undefined }>(definition: {
  readonly name: string;
  readonly summary: string;
  readonly options: OptionSpecs<O>;
  readonly defaults: O;
  readonly clusterDefaults?: Partial<O>;
  create(options: PolicyOptions): Policy;
}): PolicyDefinition {
  const defaults: Record<string, OptionValue> = {};
  for (const [name, value] of Object.entries(definition.defaults) as Array<[string, OptionValue | undefined]>) {
    if (value !== undefined) defaults[name] = value;
  }
  return {
    name: definition.name,
    summary: definition.summary,
    options: byName(definition.options),
    defaults: Object.freeze(defaults),
    ...(definition.clusterDefaults
      ? { clusterDefaults: Object.freeze({ ...(definition.clusterDefaults as Record<string, OptionValue>) }) }
      : {}),
    create: (options = {}) => definition.create(options),
  };
}

/** The error for a bad value of one option: `problem` says what is allowed (and what was given). */
export function optionError(policy: string, option: string, problem: string): MinimrError {
  return new MinimrError('EBADCONF', `scheduler policy '${policy}': option '${option}' ${problem}`, { policy, option });
}

const COUNT_WORDS = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

function rangeText(range: NumberRange): string {
  const { min, max } = range;
  if (min !== undefined && max !== undefined)
    return `in ${range.minExclusive ? '(' : '['}${min}, ${max}${range.maxExclusive ? ')' : ']'}`;
  if (min !== undefined) return `${range.minExclusive ? '>' : '>='} ${min}`;
  if (max !== undefined) return `${range.maxExclusive ? '<' : '<='} ${max}`;
  return '';
}

function numberText(range: NumberRange, plural: boolean): string {
  const noun = `${range.integer ? 'whole number' : 'number'}${plural ? 's' : ''}${range.unit === 'ms' ? ' of milliseconds' : ''}`;
  const bounds = rangeText(range);
  return bounds ? `${noun} ${bounds}` : noun;
}

/** What an option allows, in words: "true or false", "a number of milliseconds >= 0", ... */
export function allowedValues(spec: OptionSpec): string {
  switch (spec.type) {
    case 'boolean':
      return 'true or false';
    case 'number':
      return `a ${numberText(spec.range, false)}`;
    case 'choice':
      return `one of ${spec.choices.map((c) => JSON.stringify(c)).join(', ')} (any case)`;
    case 'numbers': {
      const least = spec.minItems ?? 1;
      return least > 1
        ? `a list of at least ${COUNT_WORDS[least] ?? least} ${numberText(spec.range, true)}`
        : `a list of ${numberText(spec.range, true)}`;
    }
  }
}

function inRange(value: unknown, range: NumberRange): value is number {
  if (typeof value !== 'number' || !Number.isFinite(value)) return false;
  if (range.integer && !Number.isInteger(value)) return false;
  if (range.min !== undefined && (range.minExclusive ? !(value > range.min) : !(value >= range.min))) return false;
  if (range.max !== undefined && (range.maxExclusive ? !(value < range.max) : !(value <= range.max))) return false;
  return true;
}

/** A value as a user wrote it (NaN and Infinity, which JSON cannot write, as themselves). */
export function shown(value: unknown): string {
  return typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value));
}

/** The value checked against its spec (a choice spelt as declared), or undefined when it is not allowed. */
function checked(value: unknown, spec: OptionSpec): OptionValue | undefined {
  switch (spec.type) {
    case 'boolean':
      return typeof value === 'boolean' ? value : undefined;
    case 'number':
      return inRange(value, spec.range) ? value : undefined;
    case 'choice':
      return typeof value === 'string' ? spec.choices.find((c) => c.toLowerCase() === value.toLowerCase()) : undefined;
    case 'numbers':
      return Array.isArray(value) && value.length >= (spec.minItems ?? 1) && value.every((x) => inRange(x, spec.range))
        ? Object.freeze([...value])
        : undefined;
  }
}

/** What is wrong with an option's declaration, or undefined (see OptionSpec). */
function specProblem(spec: unknown): string | undefined {
  if (typeof spec !== 'object' || spec === null) return 'is declared as no object (give { type, ..., about })';
  const s = spec as Record<string, unknown>;
  const ranged = s.type === 'number' || s.type === 'numbers';
  if (!ranged && s.type !== 'boolean' && s.type !== 'choice')
    return `has type ${shown(s.type)}; a type is 'boolean', 'number', 'numbers' or 'choice'`;
  if (ranged && (typeof s.range !== 'object' || s.range === null))
    return `of type '${String(s.type)}' declares no range (give range: {} for any finite number)`;
  if (s.type === 'choice' && !(Array.isArray(s.choices) && s.choices.every((c) => typeof c === 'string')))
    return "of type 'choice' declares no list of choices (choices: ['a', 'b'])";
  return undefined;
}

/**
 * Checks `raw` against a policy's declared options and fills in the defaults. An option it does not
 * declare, a value of the wrong type and a value out of range are each EBADCONF naming `policy` and
 * the option and saying what is allowed; an option given as `undefined` keeps its default.
 */
export function parseOptions<O extends { readonly [K in keyof O]: OptionValue | undefined }>(
  policy: string,
  raw: PolicyOptions,
  specs: OptionSpecs<O>,
  defaults: O,
): O {
  const declared = byName(specs);
  const known = Object.keys(declared);
  for (const name of known) {
    // A plug-in's declarations are not type-checked: a malformed one is named, not met as a TypeError.
    const problem = specProblem(declared[name]);
    if (problem) throw new MinimrError('EBADCONF', `scheduler policy '${policy}': option '${name}' ${problem}`);
  }
  const unknown = Object.keys(raw).filter((name) => !Object.hasOwn(declared, name));
  if (unknown.length > 0) {
    const takes = known.length > 0 ? `it takes: ${known.join(', ')}` : 'it takes no options';
    throw new MinimrError(
      'EBADCONF',
      `scheduler policy '${policy}': unknown option(s) ${unknown.map((n) => `'${n}'`).join(', ')}; ${takes}`,
      { policy, option: unknown[0]! },
    );
  }
  const out: Record<string, OptionValue | undefined> = { ...defaults };
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    const spec = declared[name]!;
    const ok = checked(value, spec);
    if (ok === undefined) throw optionError(policy, name, `must be ${allowedValues(spec)}, got ${shown(value)}`);
    out[name] = ok;
  }
  return out as O;
}

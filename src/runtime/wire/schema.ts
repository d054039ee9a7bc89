/**
 * Schemas of what crosses a process boundary, and the one way they are checked.
 *
 * Every argument of every operation is described by a TypeBox schema (JSON Schema with static
 * types): the schema is the validator (compiled once per operation), the TypeScript type (`Static`)
 * and the documentation (`/api/v1/openapi.json` is generated from the same objects). A value that
 * fails its schema is refused with a MinimrError naming the operation and the first field at fault,
 * with the code the schema declares for that part of the value: EPROTOCOL by default, EBADPATH under
 * a path, EBADJOB under a job submission (a malformed job is the user's mistake, not the peer's).
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import type { JsonObject, JsonValue } from '../../api/json.js';
import { MinimrError } from '../../errors.js';
import { MAX_PATH_LENGTH } from '../../storage/index.js';

export { Type, type Static, type TSchema };

/** The JSON Schema keyword under which a schema names the error code of values failing inside it. */
export const ERROR_CODE_KEYWORD = 'x-minimr-error-code';

/** Codes a schema may declare for values failing inside it. */
export type SchemaErrorCode = 'EPROTOCOL' | 'EBADPATH' | 'EBADJOB' | 'EBADCONF' | 'EBADREQUEST';

/**
 * An absolute path of the block store; its form (normalized, no NUL, HDFS's limits on names) is the
 * NameNode's to check. Its longest is HDFS's (storage/paths.ts MAX_PATH_LENGTH).
 */
export function PathSchema(description = 'an absolute path of the block store') {
  return Type.String({ minLength: 1, maxLength: MAX_PATH_LENGTH, description, [ERROR_CODE_KEYWORD]: 'EBADPATH' });
}

/** An identifier minted by this system (job, task, attempt, block, worker ids). */
export function IdSchema(description: string) {
  return Type.String({ minLength: 1, maxLength: 256, description });
}

/** A whole number >= 0 that fits a double exactly. */
export function CountSchema(description?: string) {
  return Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, ...(description ? { description } : {}) });
}

/** A finite number >= 0. */
export function AmountSchema(description?: string) {
  return Type.Number({ minimum: 0, ...(description ? { description } : {}) });
}

/** Named counters: name to value. */
export const CountersSchema = Type.Record(Type.String({ maxLength: 512 }), Type.Number(), {
  description: 'counters by name',
});

/**
 * The longest string an error's detail may hold. Details are ids, paths (at most 8,000 characters) and
 * short texts; the longest is a user's stack (`stack`: a failed attempt's own frames, cut at 4 KiB by
 * task/user-stack.ts).
 */
export const MAX_ERROR_DETAIL_CHARS = 64 * 1024;

/**
 * An error as it crosses the wire: code, message and details, never the engine's stack. A user's
 * exception carries its own in `details`: `at` (the top frame of the user's code, `file:line:col`,
 * relative to the job file's directory) and `stack` (the error's first line and the user's frames).
 */
export const SerializedErrorSchema = Type.Object(
  {
    code: Type.String({ maxLength: 64 }),
    message: Type.String({ maxLength: 1_000_000 }),
    details: Type.Optional(
      Type.Record(
        Type.String(),
        Type.Union([
          Type.String({ maxLength: MAX_ERROR_DETAIL_CHARS }),
          Type.Number(),
          Type.Boolean(),
          Type.Undefined(),
        ]),
        { maxProperties: 64, description: 'ids and facts a script may act on; `at` and `stack` for user code' },
      ),
    ),
  },
  { description: 'an error: a stable code and a message a user can act on' },
);

/** Any JSON-like value (a job's params, its prepare() result). */
export const JsonValueSchema = Type.Unsafe<JsonValue>(Type.Unknown({ description: 'any JSON value' }));
export const JsonObjectSchema = Type.Unsafe<JsonObject>(
  Type.Record(Type.String(), Type.Unknown(), { description: 'a JSON object' }),
);

function fieldName(pointer: string): string {
  if (pointer === '') return '(the whole value)';
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Uint8Array) return 'bytes';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return typeof value;
}

function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return kindOf(value);
}

/** The code the innermost schema on the way to `pointer` declares, EPROTOCOL if none does. */
function errorCodeAt(root: TSchema, pointer: string): SchemaErrorCode {
  let code: SchemaErrorCode = (root[ERROR_CODE_KEYWORD] as SchemaErrorCode | undefined) ?? 'EPROTOCOL';
  let schema: TSchema | undefined = root;
  for (const part of pointer.split('/').slice(1)) {
    if (!schema) break;
    if (schema.type === 'object' && schema.properties && Object.hasOwn(schema.properties, part))
      schema = schema.properties[part] as TSchema;
    else if (schema.type === 'array' && schema.items) schema = schema.items as TSchema;
    else if (schema.patternProperties) schema = Object.values(schema.patternProperties as Record<string, TSchema>)[0];
    else schema = undefined;
    const declared = schema?.[ERROR_CODE_KEYWORD] as SchemaErrorCode | undefined;
    if (declared) code = declared;
  }
  return code;
}

/** What is wrong with a value at one field, in words ("must be an integer >= 0, got -1"). */
function complaint(error: ValueError): string {
  const s = error.schema;
  const got = `got ${shown(error.value)}`;
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return 'is missing';
    case ValueErrorType.ObjectAdditionalProperties:
      return 'is not a field of this operation';
    case ValueErrorType.Integer:
      return `must be integer, got ${kindOf(error.value)}`;
    case ValueErrorType.Number:
    case ValueErrorType.String:
    case ValueErrorType.Boolean:
    case ValueErrorType.Array:
    case ValueErrorType.Object:
      return `must be ${String(s.type)}, got ${kindOf(error.value)}`;
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return `must be >= ${s.minimum}, ${got}`;
    case ValueErrorType.IntegerMaximum:
    case ValueErrorType.NumberMaximum:
      return `must be <= ${s.maximum}, ${got}`;
    case ValueErrorType.IntegerExclusiveMinimum:
    case ValueErrorType.NumberExclusiveMinimum:
      return `must be > ${s.exclusiveMinimum}, ${got}`;
    case ValueErrorType.IntegerExclusiveMaximum:
    case ValueErrorType.NumberExclusiveMaximum:
      return `must be < ${s.exclusiveMaximum}, ${got}`;
    case ValueErrorType.StringMinLength:
      return `must be at least ${s.minLength} characters long, ${got}`;
    case ValueErrorType.StringMaxLength:
      return `must be at most ${s.maxLength} characters long`;
    case ValueErrorType.StringPattern:
      return `must match ${String(s.pattern)}, ${got}`;
    case ValueErrorType.ArrayMaxItems:
      return `must have at most ${s.maxItems} items`;
    case ValueErrorType.ArrayMinItems:
      return `must have at least ${s.minItems} items`;
    case ValueErrorType.Literal:
      return `must be ${JSON.stringify(s.const)}, ${got}`;
    case ValueErrorType.Union: {
      const literals = ((s.anyOf ?? []) as TSchema[])
        .filter((o) => o.const !== undefined)
        .map((o) => JSON.stringify(o.const));
      return literals.length === (s.anyOf ?? []).length && literals.length > 0
        ? `must be one of ${literals.join(', ')}, ${got}`
        : `has none of the forms it may take, ${got}`;
    }
    default:
      return `${error.message.replace(/^Expected/, 'must be')}, ${got}`;
  }
}

/** A compiled check of one schema that throws the refusal described above. */
export class Validator<T extends TSchema> {
  private compiled?: TypeCheck<T>;

  constructor(
    readonly schema: T,
    /** What is checked, for messages: `message "heartbeat"`, `malformed job submission`. */
    private readonly subject: string,
  ) {}

  /** Whether `value` conforms; compiles the check on first use. */
  check(value: unknown): value is Static<T> {
    return this.compile().Check(value);
  }

  /** The compiled check (a few ms for a large schema): made once, here or at the first `check`. */
  compile(): TypeCheck<T> {
    this.compiled ??= TypeCompiler.Compile(this.schema);
    return this.compiled;
  }

  /** `value` as its type, or a MinimrError naming the first field at fault. */
  parse(value: unknown, details: Record<string, string | number | boolean> = {}): Static<T> {
    if (this.check(value)) return value;
    const first = this.compiled!.Errors(value).First();
    if (!first) throw new MinimrError('EPROTOCOL', `${this.subject} does not conform to its schema`, details);
    const field = fieldName(first.path);
    const text =
      first.type === ValueErrorType.ObjectRequiredProperty
        ? `${this.subject} lacks field "${field}"`
        : `${this.subject}: field "${field}" ${complaint(first)}`;
    throw new MinimrError(errorCodeAt(this.schema, first.path), text, { ...details, field });
  }
}

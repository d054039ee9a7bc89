/**
 * The one dispatcher of every link: an endpoint declares which tables it serves and, for each row,
 * the function that carries it out; a call names a row and brings raw arguments; the dispatcher
 * checks them against the row's schema, checks that the caller is one the row allows, and only
 * then calls the function. A row the endpoint does not serve is EPROTOCOL; arguments that do not
 * conform are EPROTOCOL (or the code their schema declares) naming the operation and the field; a
 * caller the row does not allow is EPERM naming the operation and the rule.
 */
import { MinimrError } from '../../errors.js';
import type { ArgsOf, OwnedResource, Operation, ResultOf, Role, Table } from './operations.js';

/** Who makes a call: the user the connection authenticated as, and the roles its link gives it. */
export interface Caller {
  readonly user: string;
  /** Roles besides `any` and what the user name gives (`admin`, `owner`): `worker`, `jobtracker`, ... */
  readonly roles: ReadonlySet<Role>;
}

/** Who owns a resource a row's owner rule names: null when no one does yet (anyone may claim it). */
export interface Ownership {
  readonly owner: string | null;
  /** The resource in words, for refusals: "job job_..._0001", "the profile of wordcount". */
  readonly what: string;
}

/** What an endpoint knows to authorize `admin` and `owner` rows. */
export interface Authority {
  readonly admin: string;
  ownerOf(resource: OwnedResource, key: string): Ownership | Promise<Ownership>;
}

/** What a row's function is given besides its arguments. */
export interface CallContext<P> {
  readonly caller: Caller;
  /** The connection the call came on. */
  readonly peer: P;
}

export type Handlers<T extends Table, P> = {
  readonly [K in keyof T]: (args: ArgsOf<T[K]>, context: CallContext<P>) => ResultOf<T[K]> | Promise<ResultOf<T[K]>>;
};

const ROLE_WORDS: Readonly<Record<Role, string>> = {
  any: 'any user',
  owner: 'its owner',
  admin: 'the admin',
  daemon: 'a daemon (a connection with the cluster secret)',
  worker: "a registered worker's connection",
  jobtracker: 'the JobTracker',
  'worker-process': "the task's worker",
  task: 'a task process',
};

/** Who a row allows, in words: `the admin or its owner`. */
export function describeAllowed(op: Operation): string {
  const words = op.allowed.map((r) =>
    r === 'owner' && op.owner ? `the owner of the ${op.owner.resource}` : ROLE_WORDS[r],
  );
  return words.length <= 1 ? (words[0] ?? 'no one') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/**
 * Throws EPERM unless `caller` is one the row allows. An owner rule asks the authority who owns
 * the resource the arguments name (which may itself fail: ENOJOB for a job no one knows).
 */
export async function authorize(
  name: string,
  op: Operation,
  args: Record<string, unknown>,
  caller: Caller,
  authority: Authority | null,
): Promise<void> {
  if (op.allowed.includes('any')) return;
  if (op.allowed.some((role) => caller.roles.has(role))) return;
  if (op.allowed.includes('admin') && authority && caller.user === authority.admin) return;
  if (op.allowed.includes('owner') && op.owner && authority) {
    const key = args[op.owner.arg];
    const { owner, what } = await authority.ownerOf(op.owner.resource, String(key));
    if (owner === null || owner === caller.user) return;
    throw new MinimrError(
      'EPERM',
      `permission denied: ${what} belongs to ${owner}; ` +
        `user ${caller.user} may not ${op.owner.action} it ("${name}" is ` +
        `for ${describeAllowed(op)})`,
      {
        operation: name,
        [op.owner.arg]: String(key),
      },
    );
  }
  throw new MinimrError(
    'EPERM',
    `permission denied: "${name}" is for ${describeAllowed(op)}; user ${caller.user || '(unauthenticated)'} is not`,
    { operation: name },
  );
}

/** One call as the dispatcher carried it out, for an audit: who asked what, and how it ended. */
export interface CallRecord<P> {
  readonly operation: string;
  readonly op: Operation;
  /** The arguments as validated. */
  readonly args: Readonly<Record<string, unknown>>;
  readonly caller: Caller;
  readonly peer: P;
  /** The answer, or the error (a refusal by authorize is an EPERM). */
  readonly outcome: { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: unknown };
}

/** Told of every call whose arguments conformed, once it has ended; must not throw. */
export type CallObserver<P> = (record: CallRecord<P>) => void;

interface Binding<P> {
  readonly op: Operation;
  readonly handler: (args: never, context: CallContext<P>) => unknown;
}

/** The rows one endpoint serves on links of peer type P, and how it knows who calls. */
export class Dispatcher<P> {
  private readonly bindings = new Map<string, Binding<P>>();
  private observer?: CallObserver<P>;

  constructor(
    /** What the endpoint is, for refusals: "a JobTracker", "a worker". */
    private readonly endpoint: string,
    private readonly callerOf: (peer: P) => Caller,
    private readonly authority: Authority | null = null,
  ) {}

  /** Serves every row of `table` with its function. */
  serve<T extends Table>(table: T, handlers: Handlers<T, P>): this {
    for (const [name, op] of Object.entries(table)) {
      if (this.bindings.has(name)) throw new Error(`${this.endpoint} serves operation ${name} twice`);
      this.bindings.set(name, { op, handler: handlers[name as keyof T] as Binding<P>['handler'] });
    }
    return this;
  }

  /** From now on, `observer` is told of each call (the JobTracker's audit log). */
  observe(observer: CallObserver<P>): this {
    this.observer = observer;
    return this;
  }

  serves(name: string): boolean {
    return this.bindings.has(name);
  }

  /** The row of `name`, if served. */
  operation(name: string): Operation | undefined {
    return this.bindings.get(name)?.op;
  }

  /** Validates, authorizes and carries out one call; the result, or a MinimrError. */
  async call(name: string, rawArgs: unknown, peer: P): Promise<unknown> {
    const binding = this.bindings.get(name);
    if (!binding)
      throw new MinimrError('EPROTOCOL', `${this.endpoint} does not accept "${name}" messages`, { operation: name });
    const args = binding.op.validator.parse(rawArgs, { operation: name });
    const caller = this.callerOf(peer);
    const observer = this.observer;
    if (!observer) {
      await authorize(name, binding.op, args, caller, this.authority);
      return binding.handler(args as never, { caller, peer });
    }
    const record = { operation: name, op: binding.op, args: args as Record<string, unknown>, caller, peer };
    try {
      await authorize(name, binding.op, args, caller, this.authority);
      const result = await binding.handler(args as never, { caller, peer });
      observer({ ...record, outcome: { ok: true, result } });
      return result;
    } catch (error) {
      observer({ ...record, outcome: { ok: false, error } });
      throw error;
    }
  }
}

/**
 * A protocol is a table of operations, declared once: each row names its arguments' schema (the
 * deep validator), its result (absent for an event, which is never answered), who may call it,
 * and, for the client link, where it is served on `/api/v1`. One dispatcher (dispatch.ts) decodes,
 * validates, authorizes and maps errors for every row of every table; typed stubs for the caller's
 * side come from the same rows (stubs.ts). Nothing else decides what a peer may send.
 *
 * Who may call (`allowed`), any of:
 * - `any`: any connection that proved the cluster secret, acting as the user it authenticated as;
 * - `owner`: the user who owns the resource the row's `owner` rule names (a job, an attempt's job,
 *   a profile); a resource no one owns yet may be claimed by anyone;
 * - `admin`: the cluster's administrator;
 * - `worker`: a registered worker's own connection;
 * - `jobtracker`, `worker-process`, `task`: the one peer of a worker's JobTracker link, of a task
 *   process's IPC channel, and of a worker's channel to its task process.
 */
import type { TObject } from '@sinclair/typebox';
import { Type, Validator, type Static, type TSchema } from './schema.js';

/** `daemon`: a connection that proved the cluster secret (workers, the operator's tools), not a user's credential. */
export type Role = 'any' | 'owner' | 'admin' | 'daemon' | 'worker' | 'jobtracker' | 'worker-process' | 'task';

/** The kinds of resources an `owner` rule may name, and the argument that holds their key. */
export type OwnedResource = 'job' | 'attempt' | 'profile';
export interface OwnerRule {
  readonly resource: OwnedResource;
  /** The argument that names the resource. */
  readonly arg: string;
  /** What the call does to it, for the refusal: "user bob may not kill it". */
  readonly action: string;
}

/** Where a client operation is served on `/api/v1`: path parameters in braces are arguments. */
export interface HttpRoute {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  /** The argument that is the request body (POST), when the body is one argument rather than all of them. */
  readonly body?: string;
}

export interface Operation<A extends TObject = TObject, R extends TSchema | null = TSchema | null> {
  readonly summary: string;
  readonly args: A;
  /** The answer's schema; null: an event, never answered. */
  readonly result: R;
  readonly allowed: readonly Role[];
  readonly owner?: OwnerRule;
  readonly http?: HttpRoute;
  /** The compiled check of `args`, shared by every endpoint that serves the row. */
  readonly validator: Validator<A>;
}

export type Table = Readonly<Record<string, Operation>>;

export type ArgsOf<O extends Operation> = Static<O['args']>;
// biome-ignore lint/suspicious/noConfusingVoidType: an event's function answers nothing; void lets it be any statement.
export type ResultOf<O extends Operation> = O['result'] extends TSchema ? Static<O['result']> : void;
export type Events<T extends Table> = { [K in keyof T]: T[K]['result'] extends null ? K : never }[keyof T];
export type Requests<T extends Table> = Exclude<keyof T, Events<T>>;

interface RowSpec<A extends TObject, R extends TSchema | null> {
  readonly summary: string;
  readonly args: A;
  readonly allowed: readonly Role[];
  readonly owner?: OwnerRule;
  readonly http?: HttpRoute;
  readonly result: R;
}

/** Declares the rows of a table: every row gets its compiled validator named after the operation. */
export function table<T extends Record<string, RowSpec<TObject, TSchema | null>>>(
  rows: T,
): { readonly [K in keyof T]: Operation<T[K]['args'], T[K]['result']> } {
  const out: Record<string, Operation> = {};
  for (const [name, row] of Object.entries(rows)) {
    if (row.allowed.includes('owner') && !row.owner)
      throw new Error(`operation ${name}: 'owner' is allowed but no owner rule says whose`);
    out[name] = { ...row, validator: new Validator(row.args, `message "${name}"`) };
  }
  return out as { readonly [K in keyof T]: Operation<T[K]['args'], T[K]['result']> };
}

/** Arguments: an object of exactly these fields. */
export function args<P extends Record<string, TSchema>>(properties: P) {
  return Type.Object(properties, { additionalProperties: false });
}

/** A result with nothing to say. */
export const Done = Type.Null({ description: 'nothing: the operation is done' });

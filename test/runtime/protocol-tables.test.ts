/**
 * Tests generated from the protocol tables (src/runtime/wire): every row of every link, checked
 * through the one dispatcher, and the client link's rows over a real JobTracker socket.
 * - a caller outside a row's `allowed` column gets EPERM naming the operation;
 * - wrong-typed arguments, field by field, get EPROTOCOL (EBADPATH for a path, EBADJOB in a job,
 *   EBADREQUEST for a log stream), naming the field, and never reach the row's function;
 * - no row ever answers EINTERNAL for bad arguments.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Value } from '@sinclair/typebox/value';
import { MinimrError } from '../../src/errors.js';
import type { JobClient, JobTracker } from '../../src/runtime/index.js';
import {
  CLIENT_PROTOCOL,
  Dispatcher,
  HANDSHAKE,
  JOBTRACKER_TO_WORKER,
  TASK_TO_WORKER,
  WORKER_TO_JOBTRACKER,
  WORKER_TO_TASK,
  WEBHDFS_PROTOCOL,
  connectPeer,
  readSecretFile,
  type Operation,
  type Role,
  type Table,
  type TSchema,
} from '../../src/runtime/wire/index.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { startJobTracker, type LoneJobTracker } from '../helpers/jobtracker.js';

const TABLES: Readonly<Record<string, Table>> = {
  CLIENT_PROTOCOL,
  WORKER_TO_JOBTRACKER,
  JOBTRACKER_TO_WORKER,
  TASK_TO_WORKER,
  WORKER_TO_TASK,
  WEBHDFS_PROTOCOL,
};
const ROLES: readonly Role[] = ['any', 'owner', 'admin', 'daemon', 'worker', 'jobtracker', 'worker-process', 'task'];
const CODES_FOR_BAD_ARGUMENTS = new Set(['EPROTOCOL', 'EBADPATH', 'EBADJOB', 'EBADREQUEST']);

/** Values TypeBox cannot make up alone (strings with a pattern), by pattern. */
const PATTERN_EXAMPLES: Readonly<Record<string, string>> = {
  '^[0-7]{1,4}$': '755',
  '^[0-1]?[0-7]{1,3}$': '755',
  '^[A-Za-z0-9_.:-]{1,128}$': 'worker-1',
  '^[0-9a-f]{8,128}$': 'abcdef0123456789',
  '^[0-9a-f]{32,128}$': 'ab'.repeat(32),
};

/** A value that conforms to `schema`: TypeBox's own, with the examples above for patterns. */
function example(schema: TSchema): unknown {
  if (schema.type === 'string' && typeof schema.pattern === 'string') return PATTERN_EXAMPLES[schema.pattern] ?? 'x';
  if (schema.type === 'object' && schema.properties) {
    const out: Record<string, unknown> = {};
    for (const [k, p] of Object.entries(schema.properties as Record<string, TSchema>)) {
      if ((schema.required ?? []).includes(k)) out[k] = example(p);
    }
    return out;
  }
  if (schema.type === 'array') return [];
  if (typeof schema.exclusiveMinimum === 'number')
    return schema.exclusiveMinimum + (schema.type === 'integer' ? 1 : 0.5);
  if (Array.isArray(schema.anyOf)) return example(schema.anyOf[0] as TSchema);
  return Value.Create(schema);
}

/** A value of another JSON type than the schema's (a string for a number, a number for a string ...). */
function wrongTyped(schema: TSchema): unknown {
  switch (schema.type) {
    case 'string':
      return 42;
    case 'array':
      return 'not-a-list';
    case 'object':
      return ['not', 'an', 'object'];
    case 'boolean':
      return 'yes';
    default:
      return { not: 'a scalar' };
  }
}

function rows(): [string, string, Operation][] {
  return Object.entries(TABLES).flatMap(([tableName, table]) =>
    Object.entries(table).map(([name, op]) => [tableName, name, op] as [string, string, Operation]),
  );
}

describe('protocol tables: every row through the dispatcher', () => {
  const calls: string[] = [];
  const dispatchers = Object.fromEntries(
    Object.entries(TABLES).map(([tableName, table]) => {
      const handlers = Object.fromEntries(Object.keys(table).map((name) => [name, () => void calls.push(name)]));
      const authority = { admin: 'root', ownerOf: () => ({ owner: 'alice', what: 'job job_x' }) };
      const d = new Dispatcher<{ roles: Role[]; user: string }>(
        tableName,
        (p) => ({ user: p.user, roles: new Set(p.roles) }),
        authority,
      ).serve(table, handlers as never);
      return [tableName, d];
    }),
  );

  it('every row has an argument schema that examples conform to, and a rule of who may call it', () => {
    for (const [tableName, name, op] of rows()) {
      assert.ok(op.allowed.length > 0, `${tableName}.${name} allows someone`);
      for (const role of op.allowed) assert.ok(ROLES.includes(role), `${tableName}.${name}: ${role}`);
      if (op.allowed.includes('owner')) assert.ok(op.owner, `${tableName}.${name} says whose resource decides`);
      assert.ok(op.validator.check(example(op.args)), `${tableName}.${name}: ${JSON.stringify(example(op.args))}`);
    }
  });

  for (const [tableName, name, op] of rows()) {
    if (op.allowed.includes('any')) continue;
    it(`${tableName}.${name}: a caller outside [${op.allowed.join(', ')}] gets EPERM naming it`, async () => {
      const outsider = {
        user: 'mallory',
        roles: ROLES.filter((r) => !op.allowed.includes(r) && r !== 'any' && r !== 'owner' && r !== 'admin'),
      };
      calls.length = 0;
      await assert.rejects(dispatchers[tableName]!.call(name, example(op.args), outsider), (err: unknown) => {
        assert.ok(err instanceof MinimrError);
        assert.equal(err.code, 'EPERM');
        assert.match(err.message, new RegExp(`"${name}"`));
        return true;
      });
      assert.deepEqual(calls, [], 'the row was not carried out');
      // And a caller inside the column passes.
      const role = op.allowed[0]!;
      const insider =
        role === 'admin'
          ? { user: 'root', roles: [] }
          : role === 'owner'
            ? { user: 'alice', roles: [] }
            : { user: 'x', roles: [role] };
      await dispatchers[tableName]!.call(name, example(op.args), insider);
      assert.deepEqual(calls, [name]);
    });
  }

  for (const [tableName, name, op] of rows()) {
    it(
      `${tableName}.${name}: wrong-typed arguments, field by field, ` + `are refused naming the field, never EINTERNAL`,
      async () => {
        const caller = { user: 'root', roles: [...ROLES] };
        const base = example(op.args) as Record<string, unknown>;
        const fields = Object.entries((op.args.properties ?? {}) as Record<string, TSchema>);
        calls.length = 0;
        for (const bad of [null, 'a string', [1, 2]]) {
          await assert.rejects(
            dispatchers[tableName]!.call(name, bad, caller),
            (err: unknown) => err instanceof MinimrError && err.code === 'EPROTOCOL',
          );
        }
        if (fields.length === 0) {
          await assert.rejects(
            dispatchers[tableName]!.call(name, { surplus: 1 }, caller),
            (err: unknown) => err instanceof MinimrError && /surplus/.test(err.message),
          );
        }
        for (const [field, schema] of fields) {
          await assert.rejects(
            dispatchers[tableName]!.call(name, { ...base, [field]: wrongTyped(schema) }, caller),
            (err: unknown) => {
              assert.ok(err instanceof MinimrError, String(err));
              assert.ok(CODES_FOR_BAD_ARGUMENTS.has(err.code), `${name}.${field}: ${err.code} ${err.message}`);
              assert.match(err.message, new RegExp(`"${name}"`));
              assert.match(err.message, new RegExp(field));
              if (schema['x-minimr-error-code'] === 'EBADPATH') assert.equal(err.code, 'EBADPATH');
              return true;
            },
          );
        }
        assert.deepEqual(calls, [], 'no bad call was carried out');
      },
    );
  }

  it('names are unique across the tables of a transport, and the handshake is not a table of the links', () => {
    const ws = [
      ...Object.keys(HANDSHAKE),
      ...Object.keys(CLIENT_PROTOCOL),
      ...Object.keys(WORKER_TO_JOBTRACKER),
      ...Object.keys(JOBTRACKER_TO_WORKER),
    ];
    assert.equal(new Set(ws).size, ws.length);
    const ipc = [...Object.keys(TASK_TO_WORKER), ...Object.keys(WORKER_TO_TASK)];
    assert.equal(new Set(ipc).size, ipc.length);
  });
});

describe('protocol tables: the client and worker rows over a real JobTracker socket', () => {
  let lone: LoneJobTracker;
  let jt: JobTracker;
  let client: JobClient;

  before(async () => {
    lone = await startJobTracker(createPolicy('fifo'), 200);
    ({ jt, client } = lone);
  });
  after(() => lone.stop());

  it('no request row answers wrong-typed arguments with EINTERNAL, and the connection stays', async () => {
    const peer = await connectPeer(jt.url, () => undefined);
    try {
      for (const table of [CLIENT_PROTOCOL, WORKER_TO_JOBTRACKER] as Table[]) {
        for (const [name, op] of Object.entries(table)) {
          if (op.result === null) continue;
          const base = example(op.args) as Record<string, unknown>;
          for (const [field, schema] of Object.entries((op.args.properties ?? {}) as Record<string, TSchema>)) {
            const err = await peer.request({ ...base, [field]: wrongTyped(schema), type: name }).then(
              () => assert.fail(`${name}.${field} was accepted`),
              (e: unknown) => e,
            );
            assert.ok(err instanceof MinimrError, String(err));
            assert.ok(CODES_FOR_BAD_ARGUMENTS.has(err.code), `${name}.${field}: ${err.code}: ${err.message}`);
          }
        }
      }
      assert.ok(peer.isOpen);
      assert.deepEqual(await peer.request({ type: 'list-jobs' }), []);
    } finally {
      peer.close();
    }
  });

  it('a user outside an admin or owner row gets EPERM over the wire; worker rows refuse a client', async () => {
    const secret = await readSecretFile(jt.secretFile);
    const bob = await connectPeer(jt.url, () => undefined, undefined, 5000, { credentials: { user: 'bob', secret } });
    try {
      for (const [name, op] of Object.entries(CLIENT_PROTOCOL as Table)) {
        if (op.allowed.includes('any') || op.allowed.includes('owner')) continue;
        const err = await bob.request({ ...(example(op.args) as object), type: name }).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(err instanceof MinimrError && err.code === 'EPERM', `${name}: ${String(err)}`);
      }
      const err = await bob.request({ type: 'task-fs-stat', path: '/', jobId: 'job_x', jobToken: 'x' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(
        err instanceof MinimrError && err.code === 'EPERM' && /registered worker/.test(err.message),
        String(err),
      );
      // A profile made by alice's jobs: bob may neither change nor remove it; alice and the admin may.
      const observation = {
        kind: 'map' as const,
        bufferBytes: 64 << 20,
        taskMs: 1000,
        inputBytes: 1 << 20,
        needBytes: 1 << 20,
        spilledBytes: 0,
      };
      await jt.profiles.record('wc-of-alice', [observation], Date.now(), 'alice');
      assert.equal(jt.profiles.get('wc-of-alice')?.owner, 'alice');
      for (const type of ['remove-profile', 'import-profile']) {
        const refused = await bob
          .request({ type, job: 'wc-of-alice', ...(type === 'import-profile' ? { profile: {} } : {}) })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        assert.ok(refused instanceof MinimrError && refused.code === 'EPERM', String(refused));
        assert.match(refused.message, /the profile of wc-of-alice belongs to alice; user bob may not/);
      }
      // A profile no one owns yet is anyone's to make; a profile older than owners is the admin's.
      assert.equal(await bob.request({ type: 'remove-profile', job: 'no-such-profile' }), false);
      await jt.profiles.put({ job: 'legacy', updatedAt: 1, runs: 1, imports: 0, map: [], reduce: [] });
      const legacy = await bob.request({ type: 'remove-profile', job: 'legacy' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(legacy instanceof MinimrError && legacy.code === 'EPERM', String(legacy));
      const alice = await connectPeer(jt.url, () => undefined, undefined, 5000, {
        credentials: { user: 'alice', secret },
      });
      assert.equal(await alice.request({ type: 'remove-profile', job: 'wc-of-alice' }), true);
      alice.close();
      assert.equal(await client.removeProfile('legacy'), true, 'the admin may');
    } finally {
      bob.close();
    }
  });
});

/**
 * `/api/v1`: the client link as JSON over HTTP, served from the same table (CLIENT_PROTOCOL) and
 * through a dispatcher serving the same functions as the WebSocket link, so validation and
 * authorization are the same by construction. A row with an `http` route is served there (path
 * parameters in braces, the other arguments from the query string, or the JSON body of a POST);
 * every other row at `POST /api/v1/call/<operation>` with its arguments as the body. Errors are
 * `{ "error": { code, message } }` with the status their code implies. `/api/v1/openapi.json` is
 * the OpenAPI 3.1 document generated from the table.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { Value } from '@sinclair/typebox/value';
import { MinimrError, serializeError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { publicError } from '../../util/index.js';
import {
  CLIENT_PROTOCOL,
  describeAllowed,
  type Dispatcher,
  type HttpRoute,
  type Operation,
  type TSchema,
} from '../wire/index.js';

/** Who calls over HTTP: the user the request's credentials name. */
export interface HttpCaller {
  readonly user: string;
  /** The client's IP address, for the audit log. */
  readonly address?: string;
}

export const API_PREFIX = '/api/v1';
/** The largest request body taken, bytes: a job's module source is the big part. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

const STATUS_OF_CODE: Readonly<Record<string, number>> = {
  EPROTOCOL: 400,
  EBADPATH: 400,
  EBADJOB: 400,
  EBADCONF: 400,
  EBADREQUEST: 400,
  ENOINPUT: 400,
  EAUTH: 401,
  EPERM: 403,
  ENOJOB: 404,
  ENOENT: 404,
  ENOATTEMPT: 404,
  ENOMRCLUSTER: 404,
  ENOROUTE: 404,
  EMETHOD: 405,
  EEXIST: 409,
  EOUTPUTEXISTS: 409,
  ENOTEMPTY: 409,
  ETOOLARGE: 413,
  EWORKERLOST: 503,
};

/** An HTTP status for an error code: 500 for a code that says nothing of the request. */
export function httpStatusOf(code: string): number {
  return STATUS_OF_CODE[code] ?? 500;
}

interface Route {
  readonly name: string;
  readonly op: Operation;
  readonly route: HttpRoute;
  readonly pattern: RegExp;
  readonly params: readonly string[];
}

/** The route of a row: its declared one, else `POST /call/<name>`. */
export function routeOf(name: string, op: Operation): HttpRoute {
  return op.http ?? { method: 'POST', path: `/call/${name}` };
}

function routes(): Route[] {
  return Object.entries(CLIENT_PROTOCOL as Record<string, Operation>).map(([name, op]) => {
    const route = routeOf(name, op);
    const params: string[] = [];
    const pattern = new RegExp(
      `^${route.path.replace(/\{(\w+)\}/g, (_m, p: string) => {
        params.push(p);
        return '([^/]+)';
      })}$`,
    );
    return { name, op, route, pattern, params };
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new MinimrError('ETOOLARGE', `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    throw new MinimrError('EBADREQUEST', `request body is not JSON: ${(err as Error).message}`);
  }
}

/** Query parameters as the row's arguments: numbers and booleans converted as its schema says. */
function queryArgs(op: Operation, url: URL, taken: ReadonlySet<string>): Record<string, unknown> {
  const raw: Record<string, unknown> = {};
  for (const [key, value] of url.searchParams) if (!taken.has(key)) raw[key] = value;
  const properties = (op.args.properties ?? {}) as Record<string, TSchema>;
  const converted: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw))
    converted[key] = properties[key] ? Value.Convert(properties[key], value) : value;
  return converted;
}

export class ApiV1 {
  private readonly table = routes();
  private openApi?: Record<string, unknown>;

  constructor(
    private readonly dispatcher: Dispatcher<HttpCaller>,
    private readonly logger: Logger,
  ) {}

  /** Serves a request under /api/v1 for `caller`; false for other paths. */
  handle(req: IncomingMessage, res: ServerResponse, url: URL, caller: HttpCaller): boolean {
    if (url.pathname !== API_PREFIX && !url.pathname.startsWith(`${API_PREFIX}/`)) return false;
    const path = url.pathname.slice(API_PREFIX.length) || '/';
    if (path === '/openapi.json' && req.method === 'GET') {
      // The table does not change while the process runs: the document is made once.
      this.openApi ??= openApiDocument();
      sendJson(res, 200, this.openApi);
      return true;
    }
    void this.call(req, res, url, path, caller).catch((err: unknown) => this.fail(res, err));
    return true;
  }

  private async call(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    path: string,
    caller: HttpCaller,
  ): Promise<void> {
    const matches = this.table.filter((r) => r.pattern.test(path));
    if (matches.length === 0)
      throw new MinimrError('ENOROUTE', `no API operation at ${API_PREFIX}${path} (see ${API_PREFIX}/openapi.json)`);
    const route = matches.find((r) => r.route.method === req.method);
    if (!route)
      throw new MinimrError(
        'EMETHOD',
        `${API_PREFIX}${path} takes ${matches.map((r) => r.route.method).join(', ')}, not ${req.method}`,
      );
    const values = route.pattern.exec(path)!.slice(1);
    const args: Record<string, unknown> = {};
    route.params.forEach((p, i) => {
      try {
        args[p] = decodeURIComponent(values[i]!);
      } catch {
        throw new MinimrError('EBADREQUEST', `bad URL encoding in ${JSON.stringify(values[i])}`);
      }
    });
    Object.assign(args, queryArgs(route.op, url, new Set(route.params)));
    if (req.method === 'POST') {
      const body = await readBody(req);
      if (route.route.body) args[route.route.body] = body;
      else if (body !== undefined) {
        if (typeof body !== 'object' || body === null || Array.isArray(body))
          throw new MinimrError('EBADREQUEST', `the body of ${route.name} is a JSON object of its arguments`);
        Object.assign(args, body);
      }
    }
    const result = await this.dispatcher.call(route.name, args, caller);
    sendJson(res, 200, result ?? null);
  }

  private fail(res: ServerResponse, err: unknown): void {
    if (err instanceof MinimrError) {
      // As on the protocol link: this host's directories are not the client's to know.
      sendJson(res, httpStatusOf(err.code), {
        error: publicError({ code: err.code, message: err.message, details: { ...err.details } }),
      });
      return;
    }
    const reference = randomBytes(4).toString('hex');
    this.logger.error({ err: serializeError(err), reference }, 'API request failed');
    sendJson(res, 500, {
      error: { code: 'EINTERNAL', message: `internal error (reference ${reference} in the server's log)` },
    });
  }
}

const ERROR_RESPONSE = {
  content: {
    'application/json': {
      schema: {
        type: 'object',
        properties: {
          error: {
            type: 'object',
            properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
            required: ['code', 'message'],
          },
        },
      },
    },
  },
};

/** The OpenAPI 3.1 document of `/api/v1`, one operation per row of the client table. */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [name, op] of Object.entries(CLIENT_PROTOCOL as Record<string, Operation>)) {
    const route = routeOf(name, op);
    const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const properties = (op.args.properties ?? {}) as Record<string, TSchema>;
    const required = new Set((op.args.required ?? []) as string[]);
    const parameters = [
      ...pathParams.map((p) => ({ name: p, in: 'path', required: true, schema: properties[p] ?? { type: 'string' } })),
      ...(route.method === 'POST'
        ? []
        : Object.entries(properties)
            .filter(([p]) => !pathParams.includes(p))
            .map(([p, schema]) => ({ name: p, in: 'query', required: required.has(p), schema }))),
    ];
    const bodyProperties = Object.fromEntries(Object.entries(properties).filter(([p]) => !pathParams.includes(p)));
    const requestBody =
      route.method !== 'POST'
        ? undefined
        : route.body
          ? { required: true, content: { 'application/json': { schema: properties[route.body] } } }
          : {
              required: false,
              content: {
                'application/json': {
                  schema: {
                    ...op.args,
                    properties: bodyProperties,
                    required: [...required].filter((r) => !pathParams.includes(r)),
                  },
                },
              },
            };
    const path = `${API_PREFIX}${route.path}`;
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = {
      operationId: name,
      summary: op.summary,
      description: `Who may call: ${describeAllowed(op)}.`,
      'x-minimr-allowed': op.allowed,
      parameters,
      ...(requestBody ? { requestBody } : {}),
      responses: {
        200: { description: 'the result', content: { 'application/json': { schema: op.result ?? { type: 'null' } } } },
        400: { description: 'arguments that do not conform (EPROTOCOL, EBADPATH, EBADJOB, ...)', ...ERROR_RESPONSE },
        401: { description: 'no or wrong credentials (EAUTH)', ...ERROR_RESPONSE },
        403: { description: 'a caller the operation does not allow (EPERM)', ...ERROR_RESPONSE },
        404: { description: 'no such job, attempt, path or MR-cluster', ...ERROR_RESPONSE },
      },
    };
  }
  return jsonSchemaOnly({
    openapi: '3.1.0',
    info: {
      title: 'minimr JobTracker API',
      version: '1',
      description:
        'The client link of a minimr JobTracker as JSON over HTTP; the ' +
        'same operations, validation and authorization as the WebSocket ' +
        'link. Credentials: HTTP Basic, any user name (the user the call ' +
        'acts as) and the web password (`minimr web-password`).',
    },
    components: { securitySchemes: { basic: { type: 'http', scheme: 'basic' } } },
    security: [{ basic: [] }],
    paths,
  }) as Record<string, unknown>;
}

const JSON_SCHEMA_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/**
 * The document as JSON Schema readers take it: TypeBox's own kinds that are not JSON types (bytes
 * of a skew sample, an absent value) become `{}` with what they were in `x-minimr-type`.
 */
function jsonSchemaOnly(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(jsonSchemaOnly);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'type' && typeof v === 'string' && !JSON_SCHEMA_TYPES.has(v)) out['x-minimr-type'] = v;
    else out[k] = jsonSchemaOnly(v);
  }
  return out;
}

/**
 * A real S3-protocol server for cluster tests: Ceph's radosgw on an in-memory one-node Ceph cluster,
 * started by the project's own scripts/s3-server.mjs (which installs Debian's packages when missing),
 * bound to loopback, with fixed test credentials. And Debian's boto3, an S3 client independent of
 * minimr's, to cross-check what minimr reads and writes (scripts/ensure-boto3.sh installs it).
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../../scripts/s3-server.mjs', import.meta.url));
const ENSURE_BOTO3 = fileURLToPath(new URL('../../../scripts/ensure-boto3.sh', import.meta.url));

export interface TestS3Server {
  readonly endpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  stop(): Promise<void>;
}

/** Starts the server (about 12 s; the first time on a machine also about 15 s of apt-get). */
export async function startS3Server(): Promise<TestS3Server> {
  const child = spawn(process.execPath, [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout });
  const first = await Promise.race([
    (async () => {
      for await (const line of lines) return line;
      return undefined;
    })(),
    exited.then(() => undefined),
  ]);
  if (first === undefined) throw new Error(`scripts/s3-server.mjs did not start: ${stderr.trim()}`);
  const info = JSON.parse(first) as Omit<TestS3Server, 'stop'>;
  return {
    ...info,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin.end();
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * The server for a cluster's tests: its credentials go into this process's environment before the
 * cluster starts, where the JobTracker and the workers' task processes find them by the AWS SDK's
 * standard chain (and nothing asks the EC2 metadata address).
 */
export async function startS3ServerForCluster(): Promise<TestS3Server> {
  const server = await startS3Server();
  process.env.AWS_EC2_METADATA_DISABLED = 'true';
  process.env.AWS_ACCESS_KEY_ID = server.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = server.secretAccessKey;
  return server;
}

/** What boto3 sees under a prefix: each object's bytes by key, and the multipart uploads still open. */
export function bucketAsBoto3Sees(
  python: string,
  server: TestS3Server,
  bucket: string,
  prefix: string,
): { objects: Map<string, Buffer>; uploads: string[] } {
  const seen = boto3(
    python,
    server,
    [
      "b, p = args['bucket'], args['prefix']",
      'objects = {}',
      "for page in s3.get_paginator('list_objects_v2').paginate(Bucket=b, Prefix=p):",
      "  for o in page.get('Contents', []):",
      "    objects[o['Key']] = s3.get_object(Bucket=b, Key=o['Key'])['Body'].read().hex()",
      "uploads = [u['Key'] for u in s3.list_multipart_uploads(Bucket=b, Prefix=p).get('Uploads', [])]",
      "result = {'objects': objects, 'uploads': uploads}",
    ].join('\n'),
    { bucket, prefix },
  ) as { objects: Record<string, string>; uploads: string[] };
  return {
    objects: new Map(Object.entries(seen.objects).map(([k, hex]) => [k, Buffer.from(hex, 'hex')])),
    uploads: seen.uploads,
  };
}

/** Debian's python3 with boto3 (installed when missing), or undefined saying nothing can be done. */
export function ensureBoto3(): string | undefined {
  try {
    return execFileSync('sh', [ENSURE_BOTO3], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  } catch {
    return undefined;
  }
}

/**
 * Runs a boto3 snippet with `s3` (a client of the test server, path-style) and `args` (JSON) bound; the
 * snippet assigns `result`, which comes back parsed from JSON. Bytes travel as hex strings.
 */
export function boto3(python: string, server: TestS3Server, code: string, args: unknown = {}): unknown {
  const prelude = [
    'import boto3, json, sys, hashlib',
    'from botocore.config import Config',
    'cfg = json.loads(sys.stdin.read())',
    "s3 = boto3.client('s3', endpoint_url=cfg['endpoint'], region_name=cfg['region'],",
    "  aws_access_key_id=cfg['key'], aws_secret_access_key=cfg['secret'],",
    "  config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 2}))",
    "args = cfg['args']",
    'result = None',
  ].join('\n');
  const out = execFileSync(python, ['-c', `${prelude}\n${code}\nprint(json.dumps(result, default=str))`], {
    input: JSON.stringify({
      endpoint: server.endpoint,
      region: server.region,
      key: server.accessKeyId,
      secret: server.secretAccessKey,
      args,
    }),
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  return JSON.parse(out);
}

export interface TestS3Proxy {
  /** Where clients go instead of the server's endpoint (same credentials, same region). */
  readonly endpoint: string;
  stop(): Promise<void>;
}

/**
 * An HTTP proxy in front of the test server, for tests that need an S3 request to stall at a chosen
 * moment: each request goes to the server as it came (its Host header too, which SigV4 signs), and
 * once the server has answered, `answerWhen` is asked when to pass the answer on: at once
 * (undefined), when the promise it gives resolves, or, if that never resolves, never. A client that
 * dies waiting has had its request carried out all the same, as it would by a real store. Stopping
 * the proxy drops the answers it still holds.
 */
export async function startS3Proxy(
  server: TestS3Server,
  answerWhen: (request: { method: string; url: string }) => Promise<void> | undefined,
): Promise<TestS3Proxy> {
  const upstream = new URL(server.endpoint);
  const sockets = new Set<Socket>();
  const proxy = createServer((req: IncomingMessage, res: ServerResponse) => {
    const forwarded = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        // A connection per request: none is left open to the server once the proxy stops.
        agent: false,
      },
      (answer) => {
        const body: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => body.push(chunk));
        answer.on('end', () => {
          const pass = () => {
            if (res.destroyed) return;
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(body));
          };
          const when = answerWhen({ method: req.method ?? '', url: req.url ?? '' });
          if (when) void when.then(pass);
          else pass();
        });
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  proxy.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}

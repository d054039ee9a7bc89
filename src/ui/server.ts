/**
 * The web UI's HTTP side: routes GET requests on the JobTracker's port to the pages (pages.ts),
 * reading what they show through `UiSource`, which the JobTracker implements over its books,
 * NameNode and policy. Every response forbids scripts (Content-Security-Policy) and sniffing;
 * a bad or unknown request is a page that says what was wrong, with its status code.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MinimrError } from '../errors.js';
import type { AttemptLogSlice, AttemptLogStream, JobStatus } from '../runtime/index.js';
import type { PolicyState } from '../scheduler/index.js';
import type { BlockInfo, BlockStoreUsage, FileStatus } from '../storage/index.js';
import { attemptLogPage, directoryPage, errorPage, filePage, jobPage, jobsPage, overviewPage, schedulerPage, type UiOverview, type UiTask } from './pages.js';

/** What the UI reads; the JobTracker provides it. */
export interface UiSource {
  overview(): UiOverview;
  jobs(): JobStatus[];
  /** A job with its tasks and their attempts; undefined when the JobTracker does not hold it. */
  job(jobId: string): { status: JobStatus; tasks: UiTask[] } | undefined;
  /** The job an attempt belongs to, if the JobTracker holds it. */
  jobOfAttempt(attemptId: string): string | undefined;
  attemptLog(attemptId: string, stream: AttemptLogStream, offset?: number, length?: number): Promise<AttemptLogSlice>;
  stat(path: string): Promise<FileStatus>;
  list(path: string): Promise<FileStatus[]>;
  blocks(path: string): Promise<BlockInfo[]>;
  blockStoreUsage(): BlockStoreUsage;
  policy(): { name: string; state?: PolicyState };
  now(): number;
}

const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
} as const;

const LOG_PAGE_BYTES = 64 * 1024;

const STATUS_OF: Readonly<Record<string, number>> = { ENOJOB: 404, ENOATTEMPT: 404, ENOENT: 404, EBADREQUEST: 400, EBADPATH: 400, EWORKERLOST: 503, EFETCH: 502 };

function intParam(url: URL, name: string): number | undefined {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return undefined;
  if (!/^\d{1,15}$/.test(v)) throw new MinimrError('EBADREQUEST', `?${name}= takes a non-negative integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

function segment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new MinimrError('EBADREQUEST', `bad URL encoding in ${JSON.stringify(raw)}`);
  }
}

/**
 * Serves the UI's pages; returns false for paths it does not know (the JobTracker answers those).
 * Pages: `/`, `/jobs`, `/jobs/ID`, `/attempts/ID/logs?stream=&offset=`, `/fs?path=`, `/scheduler`.
 */
export function createUiRequestHandler(source: UiSource): (req: IncomingMessage, res: ServerResponse) => boolean {
  const routes: ReadonlyArray<[RegExp, (m: RegExpExecArray, url: URL) => Promise<string> | string]> = [
    [/^\/$/, () => overviewPage(source.overview())],
    [/^\/jobs\/?$/, () => jobsPage(source.jobs(), source.now())],
    [
      /^\/jobs\/([^/]+)$/,
      (m) => {
        const id = segment(m[1]!);
        const job = source.job(id);
        if (!job) throw new MinimrError('ENOJOB', `no job ${id} on this JobTracker`);
        return jobPage(job.status, job.tasks, source.now());
      },
    ],
    [
      /^\/attempts\/([^/]+)\/logs$/,
      async (m, url) => {
        const id = segment(m[1]!);
        const stream = url.searchParams.get('stream') ?? 'stderr';
        if (stream !== 'stdout' && stream !== 'stderr') throw new MinimrError('EBADREQUEST', `?stream= is stdout or stderr, got ${JSON.stringify(stream)}`);
        const slice = await source.attemptLog(id, stream, intParam(url, 'offset'), LOG_PAGE_BYTES);
        return attemptLogPage(slice, source.jobOfAttempt(id), LOG_PAGE_BYTES);
      },
    ],
    [
      /^\/fs$/,
      async (_m, url) => {
        const path = url.searchParams.get('path') || '/';
        const status = await source.stat(path);
        if (status.type === 'dir') return directoryPage(path, await source.list(path), source.blockStoreUsage());
        return filePage(status, await source.blocks(path));
      },
    ],
    [
      /^\/scheduler$/,
      () => {
        const p = source.policy();
        return schedulerPage(p.name, p.state, source.jobs());
      },
    ],
  ];
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://jobtracker');
    const route = routes.find(([re]) => re.test(url.pathname));
    if (!route) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...HEADERS, allow: 'GET, HEAD' }).end(errorPage(405, 'EBADREQUEST', 'the web UI only reads: use GET'));
      return true;
    }
    void (async () => {
      let status = 200;
      let body: string;
      try {
        body = await route[1](route[0].exec(url.pathname)!, url);
      } catch (err) {
        const code = err instanceof MinimrError ? err.code : 'EINTERNAL';
        status = STATUS_OF[code] ?? 500;
        body = errorPage(status, code, (err as Error).message);
      }
      if (!res.headersSent) res.writeHead(status, HEADERS).end(req.method === 'HEAD' ? undefined : body);
    })();
    return true;
  };
}

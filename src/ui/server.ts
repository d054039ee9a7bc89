/**
 * The web UI's HTTP side: routes GET requests on the JobTracker's port to the pages (pages.ts),
 * reading what they show through `UiSource`, which the JobTracker implements over its books,
 * NameNode and policy. Every response forbids scripts (Content-Security-Policy) and sniffing;
 * a bad or unknown request is a page that says what was wrong, with its status code.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MinimrError } from '../errors.js';
import type { FinishedCursor, UiSource } from '../runtime/wire/index.js';
import {
  attemptLogPage,
  directoryPage,
  errorPage,
  filePage,
  jobPage,
  jobsPage,
  logUnavailablePage,
  overviewPage,
  schedulerPage,
} from './pages.js';

const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' " +
    "data:; form-action 'self'; base-uri 'none'; frame-ancestors " +
    "'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
} as const;

const LOG_PAGE_BYTES = 64 * 1024;
/** Finished jobs a page lists by default and at most (`?limit=`). */
const FINISHED_PAGE_JOBS = 50;
const MAX_FINISHED_PAGE_JOBS = 1000;
/** Why an attempt's log cannot be read any more: its worker removed it or is gone. */
const LOG_GONE_CODES: ReadonlySet<string> = new Set(['ENOENT', 'EWORKERLOST']);

const STATUS_OF: Readonly<Record<string, number>> = {
  ENOJOB: 404,
  ENOATTEMPT: 404,
  ENOENT: 404,
  EBADREQUEST: 400,
  EBADPATH: 400,
  EWORKERLOST: 503,
  EFETCH: 502,
};

function intParam(url: URL, name: string): number | undefined {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return undefined;
  if (!/^\d{1,15}$/.test(v))
    throw new MinimrError('EBADREQUEST', `?${name}= takes a non-negative integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

/** `?before=FINISHTIME.JOBID`: where a page of finished jobs starts (the `older` link of the one before). */
function cursorParam(url: URL): FinishedCursor | undefined {
  const v = url.searchParams.get('before');
  if (v === null || v === '') return undefined;
  const m = /^(\d{1,16})\.(.{1,200})$/s.exec(v);
  if (!m)
    throw new MinimrError(
      'EBADREQUEST',
      `?before= takes FINISHTIME.JOBID (the "older" link of the jobs page), got ${JSON.stringify(v)}`,
    );
  return { finishTime: Number(m[1]), jobId: m[2]! };
}

function segment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new MinimrError('EBADREQUEST', `bad URL encoding in ${JSON.stringify(raw)}`);
  }
}

/** A page, with its status when that is not 200. */
type Page = string | { readonly status: number; readonly body: string };

/**
 * Serves the UI's pages; returns false for paths it does not know (the JobTracker answers those).
 * Pages: `/`, `/jobs?limit=&before=`, `/jobs/ID`, `/attempts/ID/logs?stream=&offset=`, `/fs?path=`, `/scheduler`.
 */
export function createUiRequestHandler(source: UiSource): (req: IncomingMessage, res: ServerResponse) => boolean {
  const routes: ReadonlyArray<[RegExp, (m: RegExpExecArray, url: URL) => Promise<Page> | Page]> = [
    [/^\/$/, () => overviewPage(source.overview())],
    [
      /^\/jobs\/?$/,
      async (_m, url) => {
        const limit = intParam(url, 'limit') ?? FINISHED_PAGE_JOBS;
        if (limit < 1 || limit > MAX_FINISHED_PAGE_JOBS)
          throw new MinimrError('EBADREQUEST', `?limit= is 1..${MAX_FINISHED_PAGE_JOBS} jobs, got ${limit}`);
        const before = cursorParam(url);
        const active = source.jobs().filter((j) => j.state === 'running' || j.state === 'pending');
        return jobsPage(active, await source.finishedJobs(limit, before), source.now(), {
          limit,
          ...(before ? { before } : {}),
        });
      },
    ],
    [
      /^\/jobs\/([^/]+)$/,
      async (m) => {
        const id = segment(m[1]!);
        const job = await source.job(id);
        if (!job) throw new MinimrError('ENOJOB', `no job ${id} on this JobTracker or in its history`);
        return jobPage(job.status, job.tasks, source.now());
      },
    ],
    [
      /^\/attempts\/([^/]+)\/logs$/,
      async (m, url) => {
        const id = segment(m[1]!);
        const stream = url.searchParams.get('stream') ?? 'stderr';
        if (stream !== 'stdout' && stream !== 'stderr')
          throw new MinimrError('EBADREQUEST', `?stream= is stdout or stderr, got ${JSON.stringify(stream)}`);
        const offset = intParam(url, 'offset');
        try {
          const slice = await source.attemptLog(id, stream, offset, LOG_PAGE_BYTES);
          return attemptLogPage(slice, await source.jobOfAttempt(id), LOG_PAGE_BYTES);
        } catch (err) {
          if (!(err instanceof MinimrError) || !LOG_GONE_CODES.has(err.code)) throw err;
          return {
            status: STATUS_OF[err.code]!,
            body: logUnavailablePage(id, stream, await source.jobOfAttempt(id), err.message),
          };
        }
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
      res
        .writeHead(405, { ...HEADERS, allow: 'GET, HEAD' })
        .end(errorPage(405, 'EBADREQUEST', 'the web UI only reads: use GET'));
      return true;
    }
    void (async () => {
      let status = 200;
      let body: string;
      try {
        const answer = await route[1](route[0].exec(url.pathname)!, url);
        if (typeof answer === 'string') body = answer;
        else ({ status, body } = answer);
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

/**
 * The web UI's pages: each a pure function from what the JobTracker knows (the view types below,
 * filled by `UiSource`) to a page of HTML. Server-rendered, no script and no build step, so the UI
 * works behind any proxy and without a CDN, shows the same figures as `minimr job status` (the
 * same JobStatus), and is tested by reading the HTML.
 */
import type {
  AttemptLogSlice,
  AttemptSummary,
  FinishedCursor,
  FinishedJobsPage,
  JobStatus,
  UiOverview,
  UiTask,
  UiWorker,
} from '../runtime/wire/index.js';
import type { PolicyState } from '../scheduler/index.js';
import type { BlockInfo, BlockStoreUsage, FileStatus } from '../storage/index.js';
import { formatBytes } from '../util/index.js';
import { formatDuration, formatTime, href, html, link, page, progressBar, raw, table, type SafeHtml } from './html.js';

export function jobUrl(jobId: string): string {
  return `/jobs/${encodeURIComponent(jobId)}`;
}

export function logUrl(attemptId: string, stream: 'stdout' | 'stderr', offset?: number): string {
  return href(`/attempts/${encodeURIComponent(attemptId)}/logs`, { stream, offset });
}

function stateLabel(state: string): SafeHtml {
  return html`<span class="state-${state}">${state}</span>`;
}

/** A user's exception's own stack (task/user-stack.ts), where its code threw; nothing for other errors. */
function userStack(error: { details?: Record<string, unknown> } | undefined, open: boolean): SafeHtml | '' {
  const stack = error?.details?.stack;
  if (typeof stack !== 'string') return '';
  const at = typeof error?.details?.at === 'string' ? error.details.at : 'stack';
  return open
    ? html`<pre class="stack" data-field="errorStack">${stack}</pre>`
    : html`<details><summary>at ${at}</summary><pre class="stack">${stack}</pre></details>`;
}

function card(label: string, value: string, field: string): SafeHtml {
  return html`<div class="card"><b data-field="${field}">${value}</b><span>${label}</span></div>`;
}

// ---- cluster overview -----------------------------------------------------------------------

export function overviewPage(o: UiOverview): string {
  const sum = (f: (w: UiWorker) => number) => o.workers.reduce((s, w) => s + f(w), 0);
  const count = (states: readonly string[]) => o.jobs.filter((j) => states.includes(j.state)).length;
  const racks = [...new Set(o.workers.map((w) => w.rack))].sort();
  const stored = new Map(o.blockStore.datanodes.map((d) => [d.workerId, d]));
  const body = html`
<div class="cards">
${card('live workers', String(o.workers.length), 'workers')}
${card('map slots busy', `${sum((w) => w.usedMapSlots)} / ${sum((w) => w.mapSlots)}`, 'mapSlots')}
${card('reduce slots busy', `${sum((w) => w.usedReduceSlots)} / ${sum((w) => w.reduceSlots)}`, 'reduceSlots')}
${card('memory granted', `${formatBytes(sum((w) => w.usedMemoryMb) * 1048576)} ` + `/ ${formatBytes(sum((w) => w.memoryMb) * 1048576)}`, 'memory')}
${card('jobs running / queued / finished', `${count(['running'])} / ${count(['pending'])} ` + `/ ${count(['succeeded', 'failed', 'killed'])}`, 'jobs')}
${card('block store', `${o.blockStore.files} files, ${formatBytes(o.blockStore.bytes)}`, 'blockStore')}
</div>
<p>Policy ${link('/scheduler', o.policy)}, heartbeat every ${o.heartbeatMs} ms, JobTracker up since ${formatTime(o.startedAt)};
${o.blockStore.blocks} blocks, ${o.blockStore.underReplicatedBlocks} under-replicated.</p>
<h2>Workers</h2>
${table(
  o.workers,
  [
    { title: 'worker', cell: (w) => w.id, field: 'worker' },
    { title: 'data address', cell: (w) => `${w.host}:${w.dataPort}` },
    { title: 'rack', cell: (w) => w.rack, field: 'rack' },
    ...(o.workers.some((w) => w.cluster !== undefined)
      ? [{ title: 'MR-cluster', cell: (w: UiWorker) => w.cluster ?? '-' }]
      : []),
    { title: 'map slots', cell: (w) => `${w.usedMapSlots} / ${w.mapSlots}`, numeric: true, field: 'mapSlots' },
    {
      title: 'reduce slots',
      cell: (w) => `${w.usedReduceSlots} / ${w.reduceSlots}`,
      numeric: true,
      field: 'reduceSlots',
    },
    { title: 'memory (MB)', cell: (w) => `${w.usedMemoryMb} / ${w.memoryMb}`, numeric: true, field: 'memory' },
    { title: 'disk (MB/s)', cell: (w) => Math.round(w.diskMBps), numeric: true },
    { title: 'blocks', cell: (w) => stored.get(w.id)?.blocks ?? 0, numeric: true, field: 'blocks' },
    { title: 'stored', cell: (w) => formatBytes(stored.get(w.id)?.bytes ?? 0), numeric: true },
    { title: 'last heartbeat', cell: (w) => `${formatDuration(o.now - w.lastHeartbeat)} ago`, numeric: true },
  ],
  { id: 'workers', empty: 'no worker has registered', rowId: (w) => w.id },
)}
<h2>Racks</h2>
${table(
  racks,
  [
    { title: 'rack', cell: (r) => r },
    { title: 'workers', cell: (r) => o.workers.filter((w) => w.rack === r).length, numeric: true },
    {
      title: 'map slots',
      cell: (r) => o.workers.filter((w) => w.rack === r).reduce((s, w) => s + w.mapSlots, 0),
      numeric: true,
    },
    {
      title: 'reduce slots',
      cell: (r) => o.workers.filter((w) => w.rack === r).reduce((s, w) => s + w.reduceSlots, 0),
      numeric: true,
    },
    {
      title: 'memory (MB)',
      cell: (r) => o.workers.filter((w) => w.rack === r).reduce((s, w) => s + w.memoryMb, 0),
      numeric: true,
    },
  ],
  { id: 'racks', empty: 'no racks' },
)}`;
  return page('Cluster', body, { refreshSeconds: 5 });
}

// ---- jobs -----------------------------------------------------------------------------------

function jobsTable(jobs: readonly JobStatus[], id: string, now: number): SafeHtml {
  return table(
    jobs,
    [
      { title: 'job', cell: (j) => link(jobUrl(j.jobId), j.jobId), field: 'jobId' },
      { title: 'name', cell: (j) => j.name, field: 'name' },
      { title: 'pool', cell: (j) => j.pool },
      { title: 'state', cell: (j) => stateLabel(j.state), field: 'state' },
      {
        title: 'maps',
        cell: (j) => html`${progressBar(j.mapProgress, 'mapProgress')} ${j.mapsCompleted}/${j.mapsTotal}`,
        field: 'maps',
      },
      {
        title: 'reduces',
        cell: (j) => html`${progressBar(j.reduceProgress, 'reduceProgress')} ${j.reducesCompleted}/${j.reducesTotal}`,
        field: 'reduces',
      },
      { title: 'submitted', cell: (j) => formatTime(j.submitTime) },
      {
        title: 'duration',
        cell: (j) => formatDuration((j.finishTime ?? now) - (j.startTime ?? j.submitTime)),
        numeric: true,
      },
    ],
    { id, empty: 'none', rowId: (j) => j.jobId },
  );
}

export function jobsUrl(limit: number, before?: FinishedCursor): string {
  return href('/jobs', { limit, before: before ? `${before.finishTime}.${before.jobId}` : undefined });
}

/**
 * The active jobs, and one page of the finished ones (in memory or retired to the history), newest
 * first: `limit` of them, older than `paging.before` when given, with a link to the next older page.
 */
export function jobsPage(
  active: readonly JobStatus[],
  finished: FinishedJobsPage,
  now: number,
  paging: { readonly limit: number; readonly before?: FinishedCursor },
): string {
  const running = active.filter((j) => j.state === 'running');
  const queued = active.filter((j) => j.state === 'pending');
  const body = html`
<h2>Running (${running.length})</h2>
${jobsTable(running, 'running-jobs', now)}
<h2>Queued (${queued.length})</h2>
${jobsTable(queued, 'queued-jobs', now)}
<h2>Finished (${finished.total})</h2>
<p id="finished-paging">${paging.before ? html`Finished before ${formatTime(paging.before.finishTime)}: ${finished.jobs.length} shown · ${link(jobsUrl(paging.limit), 'newest')}` : html`The ${finished.jobs.length} most recent`}${finished.older ? html` · ${link(jobsUrl(paging.limit, finished.older), 'older', { rel: 'next' })}` : ''}</p>
${jobsTable(finished.jobs, 'finished-jobs', now)}`;
  return page('Jobs', body, { refreshSeconds: running.length + queued.length > 0 ? 2 : undefined });
}

/** Counters of an attempt shown in its row; the rest are in its details. */
const ROW_COUNTERS = [
  'MAP_INPUT_RECORDS',
  'MAP_OUTPUT_RECORDS',
  'REDUCE_INPUT_RECORDS',
  'REDUCE_OUTPUT_RECORDS',
  'SPILLS',
  'SHUFFLE_BYTES_REMOTE',
] as const;

function countersTable(counters: Readonly<Record<string, number>>, id?: string): SafeHtml {
  const entries = Object.entries(counters).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return table(
    entries,
    [
      { title: 'counter', cell: ([k]) => k },
      { title: 'value', cell: ([, v]) => v, numeric: true },
    ],
    { empty: 'no counters yet', rowId: ([k]) => k, ...(id ? { id } : {}) },
  );
}

export function jobPage(s: JobStatus, tasks: readonly UiTask[], now: number): string {
  const attempts = tasks
    .flatMap((t) => t.attempts)
    .sort((a, b) => a.startTime - b.startTime || (a.attemptId < b.attemptId ? -1 : 1));
  const active = s.state === 'running' || s.state === 'pending';
  const summary: ReadonlyArray<[string, string, SafeHtml | string | number]> = [
    ['state', 'state', stateLabel(s.state)],
    ['name', 'name', s.name],
    ['pool', 'pool', s.pool],
    ['output', 'outputPath', link(href('/fs', { path: s.outputPath }), s.outputPath)],
    [
      'maps',
      'maps',
      html`${progressBar(s.mapProgress, 'mapProgress')} <span data-field="mapsCompleted">${s.mapsCompleted}</span>/<span data-field="mapsTotal">${s.mapsTotal}</span>`,
    ],
    [
      'reduces',
      'reduces',
      html`${progressBar(s.reduceProgress, 'reduceProgress')} <span data-field="reducesCompleted">${s.reducesCompleted}</span>/<span data-field="reducesTotal">${s.reducesTotal}</span>`,
    ],
    ['submitted', 'submitTime', formatTime(s.submitTime)],
    ['started', 'startTime', formatTime(s.startTime)],
    ['finished', 'finishTime', formatTime(s.finishTime)],
    ['duration', 'duration', formatDuration((s.finishTime ?? now) - (s.startTime ?? s.submitTime))],
    ['failed / killed attempts', 'failedKilled', `${s.failedAttempts} / ${s.killedAttempts}`],
    ['elastic attempts', 'elasticAttempts', s.elasticAttempts],
    ['partition (Tyrex)', 'partition', s.partition],
    ['profile', 'profile', s.profile.state === 'rejected' ? `not usable: ${s.profile.reason}` : s.profile.state],
  ];
  const body = html`
${s.error ? html`<p class="error" data-field="error">${s.error.code}: ${s.error.message}</p>${userStack(s.error, true)}` : ''}
<table id="job-summary"><tbody>${summary.map(([label, field, value]) => html`<tr><th>${label}</th><td data-field="${field}">${value}</td></tr>`)}</tbody></table>
<h2>Tasks (${tasks.length})</h2>
${table(
  tasks,
  [
    { title: 'task', cell: (t) => t.taskId },
    { title: 'kind', cell: (t) => t.kind },
    { title: 'state', cell: (t) => stateLabel(t.state), field: 'state' },
    { title: 'input', cell: (t) => formatBytes(t.inputBytes), numeric: true },
    {
      title: 'attempts',
      cell: (t) =>
        t.attempts.map(
          (a, i) =>
            html`${i > 0 ? ', ' : ''}${link(`#${a.attemptId}`, a.attemptId.replace(/^.*_/, '#'))} ${stateLabel(a.state)}`,
        ),
    },
  ],
  { id: 'tasks', rowId: (t) => t.taskId },
)}
<h2>Attempts (${attempts.length})</h2>
${table(
  attempts,
  [
    { title: 'attempt', cell: (a) => html`<span id="${a.attemptId}">${a.attemptId}</span>`, field: 'attemptId' },
    { title: 'worker', cell: (a) => a.workerId, field: 'worker' },
    {
      title: 'state',
      cell: (a) =>
        html`${stateLabel(a.state)}${a.error ? html`<br><span class="error">${a.error.code}: ${a.error.message}</span>${userStack(a.error, false)}` : ''}`,
      field: 'state',
    },
    { title: 'started', cell: (a) => formatTime(a.startTime) },
    { title: 'time', cell: (a) => formatDuration((a.finishTime ?? now) - a.startTime), numeric: true },
    {
      title: 'memory (MB)',
      cell: (a) => (a.elastic ? `${a.memoryMb} elastic (ideal ${a.idealMemoryMb})` : String(a.memoryMb)),
      numeric: true,
    },
    { title: 'locality', cell: (a) => a.locality },
    ...ROW_COUNTERS.map((c) => ({
      title: c,
      cell: (a: AttemptSummary) => a.counters[c] ?? '',
      numeric: true,
      field: c,
    })),
    {
      title: 'counters',
      cell: (a) =>
        html`<details><summary>${Object.keys(a.counters).length}</summary>${countersTable(a.counters)}</details>`,
    },
    {
      title: 'logs',
      cell: (a) =>
        html`${link(logUrl(a.attemptId, 'stdout'), 'stdout', { class: 'log-link' })} ${link(logUrl(a.attemptId, 'stderr'), 'stderr', { class: 'log-link' })}`,
    },
  ],
  { id: 'attempts', rowId: (a) => a.attemptId },
)}
<h2>Counters</h2>
${countersTable(s.counters, 'job-counters')}`;
  return page(`Job ${s.jobId}`, body, { refreshSeconds: active ? 2 : undefined });
}

export function attemptLogPage(slice: AttemptLogSlice, jobId: string | undefined, length: number): string {
  const end = slice.offset + Buffer.byteLength(slice.text);
  const other = slice.stream === 'stdout' ? 'stderr' : 'stdout';
  const body = html`
<p>${jobId ? html`Job ${link(jobUrl(jobId), jobId)}, ` : ''}worker <b>${slice.workerId}</b>.
<b>${slice.stream}</b>, bytes <span data-field="range">${slice.offset}-${end}</span> of <span data-field="size">${slice.size}</span>.
${link(logUrl(slice.attemptId, other), `show ${other}`)}
${slice.offset > 0 ? html` · ${link(logUrl(slice.attemptId, slice.stream, Math.max(0, slice.offset - length)), 'earlier')}` : ''}
${end < slice.size ? html` · ${link(logUrl(slice.attemptId, slice.stream, end), 'later')} · ${link(logUrl(slice.attemptId, slice.stream), 'end')}` : ''}</p>
${slice.text === '' ? html`<p class="empty">(empty)</p>` : html`<pre class="log" id="log">${slice.text}</pre>`}`;
  return page(`${slice.stream} of ${slice.attemptId}`, body);
}

/** An attempt whose log its worker no longer has, or whose worker is gone: said so, with the reason. */
export function logUnavailablePage(
  attemptId: string,
  stream: 'stdout' | 'stderr',
  jobId: string | undefined,
  reason: string,
): string {
  const body = html`
<p class="error" id="log-unavailable">Log no longer available: ${reason}</p>
<p>${jobId ? html`Job ${link(jobUrl(jobId), jobId)}. ` : ''}The log of an attempt stays on the worker that ran it for that worker's <code>--log-retain-hours</code>.</p>`;
  return page(`${stream} of ${attemptId}`, body);
}

// ---- block store ----------------------------------------------------------------------------

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

export function directoryPage(path: string, entries: readonly FileStatus[], usage: BlockStoreUsage): string {
  const body = html`
<p>${path !== '/' ? html`${link(href('/fs', { path: parentOf(path) }), '.. (parent)')} · ` : ''}${usage.files} files, ${usage.dirs} directories, ${usage.blocks} blocks, ${formatBytes(usage.bytes)} in the whole store</p>
${table(
  entries,
  [
    {
      title: 'name',
      cell: (e) => link(href('/fs', { path: e.path }), `${e.path.split('/').pop()}${e.type === 'dir' ? '/' : ''}`),
      field: 'name',
    },
    { title: 'type', cell: (e) => e.type },
    { title: 'size', cell: (e) => (e.type === 'file' ? formatBytes(e.length) : ''), numeric: true, field: 'size' },
    { title: 'bytes', cell: (e) => (e.type === 'file' ? e.length : ''), numeric: true, field: 'bytes' },
    { title: 'replication', cell: (e) => (e.type === 'file' ? e.replication : ''), numeric: true },
    { title: 'block size', cell: (e) => (e.type === 'file' ? formatBytes(e.blockSize) : ''), numeric: true },
    { title: 'modified', cell: (e) => formatTime(e.mtime) },
  ],
  { id: 'entries', empty: 'empty directory', rowId: (e) => e.path },
)}
<h2>Storage per worker</h2>
${table(
  usage.datanodes,
  [
    { title: 'worker', cell: (d) => d.workerId },
    { title: 'rack', cell: (d) => d.rack },
    { title: 'blocks', cell: (d) => d.blocks, numeric: true },
    { title: 'stored', cell: (d) => formatBytes(d.bytes), numeric: true },
  ],
  { id: 'datanodes', empty: 'no live datanodes' },
)}`;
  return page(`Block store: ${path}`, body);
}

export function filePage(file: FileStatus, blocks: readonly BlockInfo[]): string {
  const body = html`
<p>${link(href('/fs', { path: parentOf(file.path) }), '.. (directory)')} · <span data-field="bytes">${file.length}</span> bytes (${formatBytes(file.length)}), replication ${file.replication}, block size ${formatBytes(file.blockSize)}, modified ${formatTime(file.mtime)}</p>
<h2>Blocks (${blocks.length})</h2>
${table(
  blocks,
  [
    { title: 'block', cell: (b) => b.blockId, field: 'block' },
    { title: 'offset', cell: (b) => b.offset, numeric: true },
    { title: 'length', cell: (b) => b.length, numeric: true, field: 'length' },
    {
      title: 'replicas',
      cell: (b) => b.locations.map((l) => `${l.workerId} (${l.rack})`).join(', ') || 'none live',
      field: 'replicas',
    },
  ],
  { id: 'blocks', empty: 'no blocks (empty file)' },
)}`;
  return page(`File ${file.path}`, body);
}

// ---- scheduler ------------------------------------------------------------------------------

export function schedulerPage(policy: string, state: PolicyState | undefined, jobs: readonly JobStatus[]): string {
  const body = state
    ? html`<ul>${state.notes.map((n) => html`<li>${n}</li>`)}</ul>
${state.tables.map(
  (t) => html`<h2>${t.title}</h2>
${table(
  t.rows,
  t.columns.map((c, i) => ({
    title: c,
    cell: (r: ReadonlyArray<string | number>) => r[i],
    numeric: typeof t.rows[0]?.[i] === 'number',
  })),
  { empty: 'none' },
)}`,
)}`
    : html`<p>Policy <b>${policy}</b> keeps no state between decisions: it serves the active jobs below in its own order.</p>
${table(
  jobs.filter((j) => j.state === 'running' || j.state === 'pending'),
  [
    { title: 'job', cell: (j) => link(jobUrl(j.jobId), j.jobId) },
    { title: 'pool', cell: (j) => j.pool },
    { title: 'state', cell: (j) => stateLabel(j.state) },
    { title: 'maps done', cell: (j) => `${j.mapsCompleted}/${j.mapsTotal}`, numeric: true },
    { title: 'reduces done', cell: (j) => `${j.reducesCompleted}/${j.reducesTotal}`, numeric: true },
  ],
  { empty: 'no active jobs' },
)}`;
  return page(`Scheduler: ${policy}`, body, { refreshSeconds: 5 });
}

export function errorPage(status: number, code: string, message: string): string {
  return page(
    `${status} ${code}`,
    html`<p class="error">${message}</p><p>${raw('<a href="/">Back to the cluster</a>')}</p>`,
  );
}

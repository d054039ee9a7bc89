/**
 * HTML for the web UI, escaped by construction: `html` is a tagged template whose interpolated
 * values are escaped unless they are themselves `SafeHtml` (made by `html` or `raw`), so a job,
 * pool, path or worker name (user input) can never become markup. Pages carry no script at all;
 * the server's Content-Security-Policy forbids scripts, so even a missed escape could not run one.
 */

export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

type Renderable = SafeHtml | string | number | boolean | null | undefined | readonly Renderable[];

function render(value: Renderable): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map((v: Renderable) => render(v)).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Renderable[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** Markup written in this folder, never from user input. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** A path of the UI with its query, each part encoded. */
export function href(path: string, query: Readonly<Record<string, string | number | undefined>> = {}): string {
  const q = Object.entries(query).filter((e): e is [string, string | number] => e[1] !== undefined);
  return q.length === 0
    ? path
    : `${path}?${q.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`).join('&')}`;
}

export function link(url: string, text: Renderable, attrs: Readonly<Record<string, string>> = {}): SafeHtml {
  const extra = Object.entries(attrs).map(([k, v]) => html` ${raw(k)}="${v}"`);
  return html`<a href="${url}"${extra}>${text}</a>`;
}

export interface Column<T> {
  readonly title: string;
  readonly cell: (row: T) => Renderable;
  /** `data-field` of the cells, so tests and scripts can find a figure. */
  readonly field?: string;
  readonly numeric?: boolean;
}

export function table<T>(
  rows: readonly T[],
  columns: readonly Column<T>[],
  options: { id?: string; empty?: string; rowId?: (row: T) => string } = {},
): SafeHtml {
  if (rows.length === 0)
    return html`<p class="empty"${options.id ? html` id="${options.id}"` : ''}>${options.empty ?? 'none'}</p>`;
  const cls = (c: Column<T>) => (c.numeric ? raw(' class="num"') : '');
  const field = (c: Column<T>) => (c.field ? html` data-field="${c.field}"` : '');
  return html`<table${options.id ? html` id="${options.id}"` : ''}>
<thead><tr>${columns.map((c) => html`<th${cls(c)}>${c.title}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr${options.rowId ? html` data-id="${options.rowId(r)}"` : ''}>${columns.map((c) => html`<td${cls(c)}${field(c)}>${c.cell(r)}</td>`)}</tr>\n`)}</tbody>
</table>`;
}

/** A progress bar of a fraction 0..1, with its percentage as text. */
export function progressBar(fraction: number, field?: string): SafeHtml {
  const pct = Math.max(0, Math.min(100, fraction * 100));
  return html`<span class="progress"${field ? html` data-field="${field}"` : ''} data-value="${pct.toFixed(1)}"><span class="bar"><span style="width:${pct.toFixed(1)}%"></span></span> ${pct.toFixed(1)}%</span>`;
}

export function formatTime(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '-';
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '-';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return s < 3600
    ? `${Math.floor(s / 60)} min ${s % 60} s`
    : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1f3a5f;color:#fff;padding:8px 16px;display:flex;gap:20px;align-items:baseline}
header a{color:#dbe7ff;text-decoration:none}header a.brand{font-weight:700;color:#fff;font-size:16px}
main{padding:12px 16px}h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:18px 0 6px}
table{border-collapse:collapse;background:#fff;margin-bottom:8px}th,td{border:1px solid #d6dae1;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin-bottom:8px}.card{background:#fff;border:1px solid #d6dae1;padding:8px 12px;min-width:130px}
.card b{display:block;font-size:18px}.card span{color:#5b6472;font-size:12px}
.progress{white-space:nowrap}.bar{display:inline-block;width:110px;height:10px;background:#e3e7ee;vertical-align:middle}
.bar span{display:block;height:10px;background:#3a7bd5}
.state-succeeded{color:#1b7f3b}.state-failed{color:#b3261e}.state-killed{color:#8a5a00}.state-running{color:#1f5fbf}
pre.log{background:#10141a;color:#e4e8ee;padding:10px;overflow:auto;max-height:70vh;white-space:pre-wrap}
pre.stack{background:#fff;border:1px solid #d6dae1;padding:6px 8px;margin:4px 0;overflow:auto;white-space:pre-wrap}
.empty{color:#5b6472;font-style:italic}.error{color:#b3261e}details summary{cursor:pointer;color:#1f5fbf}
`;

/**
 * A whole page: header with the navigation, the title and the body. `refreshSeconds` reloads it
 * (a running job's progress).
 */
export function page(title: string, body: SafeHtml, options: { refreshSeconds?: number } = {}): string {
  const nav = [
    ['/', 'Cluster'],
    ['/jobs', 'Jobs'],
    ['/fs', 'Block store'],
    ['/scheduler', 'Scheduler'],
    ['/metrics', 'Metrics'],
  ] as const;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} · minimr</title>
${options.refreshSeconds ? html`<meta http-equiv="refresh" content="${options.refreshSeconds}">` : ''}
<style>${raw(STYLE)}</style></head>
<body><header><a class="brand" href="/">minimr</a>${nav.map(([p, t]) => link(p, t))}</header>
<main><h1>${title}</h1>
${body}
</main></body></html>
`.value;
}

/**
 * A small SVG line chart, enough for benchmark and profile plots (penalty curves, CDFs) without a
 * plotting dependency. Axes start at the data's range, ticks are round numbers.
 */
export interface Series {
  readonly name: string;
  readonly points: ReadonlyArray<readonly [number, number]>;
  readonly dashed?: boolean;
}

export interface LineChartOptions {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  readonly width?: number;
  readonly height?: number;
  /** Force the y axis to include 0 (default true). */
  readonly yFromZero?: boolean;
  /** 'log': a log10 x axis with a tick per decade (points at x <= 0 are left out), for long-tailed CDFs. */
  readonly xScale?: 'linear' | 'log';
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function niceStep(range: number, target: number): number {
  const raw = range / Math.max(1, target);
  const mag = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 2.5, 5, 10]) if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

function ticks(min: number, max: number, target = 5): number[] {
  const step = niceStep(max - min, target);
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function fmt(v: number): string {
  return Math.abs(v) >= 1000 || (Math.abs(v) < 0.01 && v !== 0) ? v.toExponential(1) : String(Number(v.toPrecision(4)));
}

export function lineChart(options: LineChartOptions): string {
  const width = options.width ?? 640;
  const height = options.height ?? 400;
  const margin = { left: 64, right: 160, top: 40, bottom: 52 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const log = options.xScale === 'log';
  // On a log axis the chart is drawn in log10(x): positions, range and ticks alike.
  const series = log
    ? options.series.map((s) => ({
        ...s,
        points: s.points.filter((p) => p[0] > 0).map((p) => [Math.log10(p[0]), p[1]] as const),
      }))
    : options.series;
  const all = series.flatMap((s) => s.points);
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]);
  let xMin = Math.min(...xs);
  let xMax = Math.max(...xs);
  let yMin = options.yFromZero === false ? Math.min(...ys) : Math.min(0, ...ys);
  let yMax = Math.max(...ys);
  if (!Number.isFinite(xMin)) [xMin, xMax, yMin, yMax] = [0, 1, 0, 1];
  if (xMax === xMin) xMax = xMin + 1;
  if (yMax === yMin) yMax = yMin + 1;
  yMax += (yMax - yMin) * 0.05;
  const sx = (x: number) => margin.left + ((x - xMin) / (xMax - xMin)) * plotW;
  const sy = (y: number) => margin.top + plotH - ((y - yMin) / (yMax - yMin)) * plotH;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" ` +
      `height="${height}" viewBox="0 0 ${width} ${height}" ` +
      `font-family="sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  parts.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(options.title)}</text>`);
  const xTicks = log
    ? Array.from({ length: Math.floor(xMax) - Math.ceil(xMin) + 1 }, (_, i) => Math.ceil(xMin) + i)
    : ticks(xMin, xMax);
  for (const t of xTicks) {
    parts.push(`<line x1="${sx(t)}" y1="${margin.top}" x2="${sx(t)}" y2="${margin.top + plotH}" stroke="#eee"/>`);
    parts.push(
      `<text x="${sx(t)}" y="${margin.top + plotH + 16}" text-anchor="middle">${fmt(log ? 10 ** t : t)}</text>`,
    );
  }
  for (const t of ticks(yMin, yMax)) {
    parts.push(`<line x1="${margin.left}" y1="${sy(t)}" x2="${margin.left + plotW}" y2="${sy(t)}" stroke="#eee"/>`);
    parts.push(`<text x="${margin.left - 6}" y="${sy(t) + 4}" text-anchor="end">${fmt(t)}</text>`);
  }
  parts.push(
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
  );
  const xLabel = log ? `${options.xLabel} (log scale)` : options.xLabel;
  parts.push(
    `<text x="${margin.left + plotW / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(xLabel)}</text>`,
  );
  parts.push(
    `<text transform="translate(16 ${margin.top + plotH / 2}) ` +
      `rotate(-90)" ` +
      `text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    const d = pts.map((p, j) => `${j === 0 ? 'M' : 'L'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(' ');
    parts.push(
      `<path d="${d}" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
    );
    for (const p of pts)
      parts.push(`<circle cx="${sx(p[0]).toFixed(1)}" cy="${sy(p[1]).toFixed(1)}" r="3" fill="${color}"/>`);
    const ly = margin.top + 10 + i * 18;
    const lx = margin.left + plotW + 12;
    parts.push(
      `<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" ` +
        `stroke="${color}" ` +
        `stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
    );
    parts.push(`<text x="${lx + 30}" y="${ly + 4}">${escapeXml(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** A CSV field: quoted when it holds a comma, a quote or a line break. */
export function csvField(value: string | number): string {
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The data of a line chart as CSV (series, x, y: one row per point), to put beside its SVG. */
export function lineChartCsv(options: LineChartOptions): string {
  const rows = [[csvField('series'), csvField(options.xLabel), csvField(options.yLabel)].join(',')];
  for (const s of options.series) for (const [x, y] of s.points) rows.push([csvField(s.name), x, y].join(','));
  return `${rows.join('\n')}\n`;
}

/** A line chart's files: `[base.svg, the chart]` and `[base.csv, its data]`, to write side by side. */
export function lineChartFiles(base: string, options: LineChartOptions): Array<[string, string]> {
  return [
    [`${base}.svg`, lineChart(options)],
    [`${base}.csv`, lineChartCsv(options)],
  ];
}

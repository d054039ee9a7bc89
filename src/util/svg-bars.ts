import { csvField } from './svg-plot.js';

/**
 * A grouped bar chart in the style of `lineChart`: one group per category, one bar per series.
 */
export interface BarSeries {
  readonly name: string;
  /** One value per category, in category order. */
  readonly values: readonly number[];
}

export interface BarChartOptions {
  readonly title: string;
  readonly yLabel: string;
  readonly categories: readonly string[];
  readonly series: readonly BarSeries[];
  readonly width?: number;
  readonly height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const mag = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * mag) return m * mag;
  return 10 * mag;
}

function fmt(v: number): string {
  return Math.abs(v) >= 10000 || (Math.abs(v) < 0.01 && v !== 0)
    ? v.toExponential(1)
    : String(Number(v.toPrecision(4)));
}

export function barChart(options: BarChartOptions): string {
  const width = options.width ?? 640;
  const height = options.height ?? 400;
  const margin = { left: 72, right: 160, top: 40, bottom: 60 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const all = options.series.flatMap((s) => s.values.filter((v) => Number.isFinite(v)));
  const yMax = niceMax(Math.max(0, ...all));
  const sy = (y: number) => margin.top + plotH - (y / yMax) * plotH;
  const groups = Math.max(1, options.categories.length);
  const groupW = plotW / groups;
  const barW = (groupW * 0.8) / Math.max(1, options.series.length);
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" ` +
      `height="${height}" viewBox="0 0 ${width} ${height}" ` +
      `font-family="sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  parts.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(options.title)}</text>`);
  for (let i = 0; i <= 5; i++) {
    const v = (yMax * i) / 5;
    parts.push(`<line x1="${margin.left}" y1="${sy(v)}" x2="${margin.left + plotW}" y2="${sy(v)}" stroke="#eee"/>`);
    parts.push(`<text x="${margin.left - 6}" y="${sy(v) + 4}" text-anchor="end">${fmt(v)}</text>`);
  }
  options.categories.forEach((c, gi) => {
    const gx = margin.left + gi * groupW + groupW * 0.1;
    options.series.forEach((s, si) => {
      const v = s.values[gi] ?? 0;
      const h = Number.isFinite(v) ? Math.max(0, (v / yMax) * plotH) : 0;
      parts.push(
        `<rect x="${(gx + si * barW).toFixed(1)}" ` +
          `y="${(margin.top + plotH - h).toFixed(1)}" ` +
          `width="${(barW * 0.95).toFixed(1)}" height="${h.toFixed(1)}" ` +
          `fill="${COLORS[si % COLORS.length]}"><title>${escapeXml(`${s.name}, ${c}: ${fmt(v)}`)}</title></rect>`,
      );
    });
    parts.push(
      `<text x="${(margin.left + gi * groupW + groupW / 2).toFixed(1)}" ` +
        `y="${margin.top + plotH + 16}" ` +
        `text-anchor="middle">${escapeXml(c)}</text>`,
    );
  });
  parts.push(
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
  );
  parts.push(
    `<text transform="translate(16 ${margin.top + plotH / 2}) ` +
      `rotate(-90)" ` +
      `text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
  );
  options.series.forEach((s, i) => {
    const ly = margin.top + 10 + i * 18;
    const lx = margin.left + plotW + 12;
    parts.push(`<rect x="${lx}" y="${ly - 6}" width="16" height="12" fill="${COLORS[i % COLORS.length]}"/>`);
    parts.push(`<text x="${lx + 22}" y="${ly + 4}">${escapeXml(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** The data of a bar chart as CSV (series, category, value: one row per bar), to put beside its SVG. */
export function barChartCsv(options: BarChartOptions): string {
  const rows = [['series', 'category', csvField(options.yLabel)].join(',')];
  for (const s of options.series)
    options.categories.forEach((category, i) =>
      rows.push([csvField(s.name), csvField(category), s.values[i] ?? ''].join(',')),
    );
  return `${rows.join('\n')}\n`;
}

/** A bar chart's files: `[base.svg, the chart]` and `[base.csv, its data]`, to write side by side. */
export function barChartFiles(base: string, options: BarChartOptions): Array<[string, string]> {
  return [
    [`${base}.svg`, barChart(options)],
    [`${base}.csv`, barChartCsv(options)],
  ];
}

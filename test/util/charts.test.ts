import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { barChartFiles, lineChart, lineChartFiles } from '../../src/util/index.js';

/** Every SVG chart's data beside it as CSV (issue 38), and a log x axis for long-tailed CDFs. */
describe('charts and their CSV', () => {
  const cdf = {
    title: 'CDF',
    xLabel: 'slowdown',
    yLabel: 'fraction, of jobs',
    series: [
      { name: 'fifo', points: [[1, 0.5] as const, [30, 1] as const] },
      { name: 'fair "x"', points: [[2, 1] as const] },
    ],
  };

  test('a line chart and its CSV: one row per point, fields with commas or quotes quoted', () => {
    const [[svgName, svg], [csvName, csv]] = lineChartFiles('cdf', cdf);
    assert.equal(svgName, 'cdf.svg');
    assert.match(svg!, /^<svg/);
    assert.equal(csvName, 'cdf.csv');
    assert.equal(csv, 'series,slowdown,"fraction, of jobs"\nfifo,1,0.5\nfifo,30,1\n"fair ""x""",2,1\n');
  });

  test('a bar chart and its CSV: one row per bar', () => {
    const files = barChartFiles('moved', {
      title: 't',
      yLabel: 'GiB',
      categories: ['remote', 'off-rack'],
      series: [{ name: 'fifo', values: [1.5, 0] }],
    });
    assert.deepEqual(
      files.map(([name]) => name),
      ['moved.svg', 'moved.csv'],
    );
    assert.equal(files[1]![1], 'series,category,GiB\nfifo,remote,1.5\nfifo,off-rack,0\n');
  });

  test('a log x axis has a tick per decade and says so', () => {
    const svg = lineChart({
      ...cdf,
      xScale: 'log',
      series: [
        {
          name: 'a',
          points: [
            [0, 0],
            [1, 0.2],
            [250, 1],
          ],
        },
      ],
    });
    const labels = [...svg.matchAll(/text-anchor="middle">([^<]+)<\/text>/g)].map((m) => m[1]);
    for (const decade of ['1', '10', '100']) assert.ok(labels.includes(decade), `${decade} in ${labels.join(' | ')}`);
    assert.ok(labels.includes('slowdown (log scale)'));
    // The point at 0 has no place on a log axis: two points drawn.
    assert.equal([...svg.matchAll(/<circle /g)].length, 2);
  });
});

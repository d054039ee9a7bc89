export { seededRandom, seededUint32 } from './random.js';
export { lineChart, type LineChartOptions, type Series } from './svg-plot.js';
export { zipfSampler } from './zipf.js';

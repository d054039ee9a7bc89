export { seededRandom, seededUint32 } from './random.js';
export { lineChart, type LineChartOptions, type Series } from './svg-plot.js';
export { barChart, type BarChartOptions, type BarSeries } from './svg-bars.js';
export { zipfSampler } from './zipf.js';
export { parseSize, formatBytes } from './units.js';
export { EventHeap, type HeapEntry } from './event-heap.js';
export { escapeControlCharacters } from './text.js';
export { meanWithStandardError, type MeanWithError } from './stats.js';
export { phaseTrace, type PhaseTraceEvent } from './phase-trace.js';

export * from './pure.js';
export { csvField, lineChart, lineChartCsv, lineChartFiles, type LineChartOptions, type Series } from './svg-plot.js';
export { barChart, barChartCsv, barChartFiles, type BarChartOptions, type BarSeries } from './svg-bars.js';
export { peakRssBytes, phaseTrace, type PhaseTraceEvent } from './phase-trace.js';
export { publicError, redactPrivatePaths, registerPrivateDir, unregisterPrivateDir } from './private-paths.js';
export { openExclusively } from './exclusive-open.js';

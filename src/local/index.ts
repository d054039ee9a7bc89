/**
 * An embedded cluster: a JobTracker in this process with its web pages, and worker processes on
 * this machine (`minimr local`, `npm start`, the tests). An entry point, like the CLI: it wires the
 * runtime to the UI, which the runtime itself never imports.
 */
export { LocalCluster, type LocalClusterOptions, type LocalWorkerProcess } from './local-cluster.js';
export { runOnLocalFiles, type LocalJob, type LocalRunOptions, type LocalRunResult } from './run-local.js';

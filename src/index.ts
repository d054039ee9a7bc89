/** The public job API: what a job module imports from 'minimr'. */
export * from './api/index.js';
export { MinimrError, type MinimrErrorCode } from './errors.js';

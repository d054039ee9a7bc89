export { createUiRequestHandler, type UiSource } from './server.js';
export { escapeHtml, html, raw, type SafeHtml } from './html.js';
export { attemptLogPage, directoryPage, filePage, jobPage, jobsPage, jobsUrl, logUnavailablePage, overviewPage, schedulerPage, jobUrl, logUrl, type UiOverview, type UiTask, type UiWorker } from './pages.js';

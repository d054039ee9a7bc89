export { createUiRequestHandler } from './server.js';
export { escapeHtml, html, raw, type SafeHtml } from './html.js';
export {
  attemptLogPage,
  directoryPage,
  filePage,
  jobPage,
  jobsPage,
  jobsUrl,
  logUnavailablePage,
  overviewPage,
  schedulerPage,
  jobUrl,
  logUrl,
} from './pages.js';

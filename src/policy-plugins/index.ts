export { loadPolicyPlugin, loadPolicyPlugins } from './load.js';

/** The command modules of `minimr`, one per command group; src/cli/main.ts lists them in help order. */
export { benchCommand } from './bench.js';
export { fsCommand } from './fs.js';
export { jobCommand } from './job.js';
export { jobtrackerCommand } from './jobtracker.js';
export { joinTokenCommand, JOIN_URL_FILE } from './join-token.js';
export { localCommand } from './local.js';
export { mrcCommand } from './mrc.js';
export { policiesCommand } from './policies.js';
export { policyCommand } from './policy.js';
export { profileCommand } from './profile.js';
export { profilesCommand } from './profiles.js';
export { runCommand } from './run.js';
export { simCommand } from './sim.js';
export { streamingCommand, streamingJob, type StreamingJob, type StreamingOptions } from './streaming.js';
export { submitCommand } from './submit.js';
export { userCommand } from './user.js';
export { webPasswordCommand } from './web-password.js';
export { workerCommand } from './worker.js';

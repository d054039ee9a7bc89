/** The client side of a cluster: submitting and following jobs, and the elasticity profiler. */
export { JobClient, type SubmitOptions, type WaitOptions } from './job-client.js';
export {
  profileJob,
  profileMarkdown,
  profileChart,
  mapSpilledBytesModel,
  reduceSpilledBytesModel,
  fitSpillModel,
  type ElasticityProfile,
  type ProfileOptions,
  type ProfilePoint,
} from './elasticity-profile.js';

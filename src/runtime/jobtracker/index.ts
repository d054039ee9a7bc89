/** The JobTracker process (Hadoop's JobTracker and NameNode): what other folders may use of it. */
export { JobTracker, type JobTrackerOptions } from './jobtracker.js';
export { openApiDocument, API_PREFIX } from './api-v1.js';
export { mrClusterOfPath, mrClusterRoot, type MrClusterListing, type MrClusterRow } from './mr-cluster-runtime.js';
export {
  estimatesFor,
  phaseEstimate,
  neededBufferBytes,
  addObservations,
  observationsOf,
  profileObservations,
  validateElasticityProfile,
  MAX_BUCKET_ATTEMPTS,
  type AttemptObservation,
  type TaskEstimate,
} from './job-profile.js';

/**
 * The client link (Hadoop's ClientProtocol): what the CLI, the job client, the UI and `/api/v1`
 * may ask of the JobTracker. The same rows serve the WebSocket link and the JSON API, with the
 * same validation and authorization; the OpenAPI document is generated from them.
 */
import { namenodeRows } from './namenode-operations.js';
import { Done, args, table, type HttpRoute, type Operation } from './operations.js';
import { CountSchema, IdSchema, JsonObjectSchema, PathSchema, Type, type Static, type TSchema } from './schema.js';
import {
  AttemptLogSliceResult,
  AttemptSummaryResult,
  ClusterInfoResultSchema,
  JobProfileResult,
  JobStatusResult,
  JobSubmissionSchema,
  MAX_LOG_READ_BYTES,
  looseObject,
} from './types.js';

const JobId = IdSchema('the job, as `submit` printed it (job_YYYYMMDDhhmmss_NNNN)');
const ProfileName = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'the job name whose profile it is (`defineJob({ name })`)',
});
const MrClusterName = Type.String({ minLength: 1, maxLength: 128, description: 'the MR-cluster' });

const jobOperations = table({
  'submit-job': {
    summary: 'submit a job; answers its id',
    args: args({ job: JobSubmissionSchema }),
    result: Type.Object({ jobId: Type.String() }),
    allowed: ['any'],
    http: { method: 'POST', path: '/jobs', body: 'job' },
  },
  'job-status': {
    summary: "a job's status (running, queued, ended, or retired to the history)",
    args: args({ jobId: JobId }),
    result: JobStatusResult,
    allowed: ['any'],
    http: { method: 'GET', path: '/jobs/{jobId}' },
  },
  'list-jobs': {
    summary: "the jobs in the JobTracker's memory; with all, the retired ones too",
    args: args({ all: Type.Optional(Type.Boolean()) }),
    result: Type.Array(JobStatusResult),
    allowed: ['any'],
    http: { method: 'GET', path: '/jobs' },
  },
  'job-attempts': {
    summary: "a job's attempts with their workers, times, memory and counters",
    args: args({ jobId: JobId }),
    result: Type.Array(AttemptSummaryResult),
    allowed: ['any'],
    http: { method: 'GET', path: '/jobs/{jobId}/attempts' },
  },
  'kill-job': {
    summary: 'kill a job; answers its status',
    args: args({ jobId: JobId }),
    result: JobStatusResult,
    allowed: ['owner', 'admin'],
    owner: { resource: 'job', arg: 'jobId', action: 'kill' },
    http: { method: 'POST', path: '/jobs/{jobId}/kill' },
  },
  'wait-job': {
    summary: "answered with the job's final status once it has ended and its clean-up is done",
    args: args({ jobId: JobId }),
    result: JobStatusResult,
    allowed: ['any'],
    http: { method: 'GET', path: '/jobs/{jobId}/wait' },
  },
  'attempt-log': {
    summary: "a slice of an attempt's stdout or stderr, read from the worker that ran it (default: the last 64 KiB)",
    args: args({
      attemptId: IdSchema('the attempt'),
      stream: Type.String({ description: 'stdout or stderr', 'x-minimr-error-code': 'EBADREQUEST' }),
      offset: Type.Optional(CountSchema('where the slice starts; default: the tail')),
      length: Type.Optional(
        Type.Integer({ minimum: 0, maximum: MAX_LOG_READ_BYTES, 'x-minimr-error-code': 'EBADREQUEST' }),
      ),
    }),
    result: AttemptLogSliceResult,
    allowed: ['owner', 'admin'],
    owner: { resource: 'attempt', arg: 'attemptId', action: 'read the logs of' },
    http: { method: 'GET', path: '/attempts/{attemptId}/log' },
  },
  'cluster-info': {
    summary: 'the live workers, the policy and the heartbeat',
    args: args({}),
    result: ClusterInfoResultSchema,
    allowed: ['any'],
    http: { method: 'GET', path: '/cluster' },
  },
});

const profileOperations = table({
  'job-profiles': {
    summary: 'the profiles of recurring jobs: all, or the one of job',
    args: args({ job: Type.Optional(ProfileName) }),
    result: Type.Array(JobProfileResult),
    allowed: ['any'],
    http: { method: 'GET', path: '/profiles' },
  },
  'import-profile': {
    summary:
      "add a `minimr profile` result to the profile of job (its owner or the admin; a new profile is the importer's)",
    args: args({ job: ProfileName, profile: JsonObjectSchema }),
    result: JobProfileResult,
    allowed: ['owner', 'admin'],
    owner: { resource: 'profile', arg: 'job', action: 'change' },
    http: { method: 'POST', path: '/profiles/{job}', body: 'profile' },
  },
  'remove-profile': {
    summary: 'forget the profile of job (its owner or the admin); answers whether there was one',
    args: args({ job: ProfileName }),
    result: Type.Boolean(),
    allowed: ['owner', 'admin'],
    owner: { resource: 'profile', arg: 'job', action: 'remove' },
    http: { method: 'DELETE', path: '/profiles/{job}' },
  },
});

const MrClusterRowResult = looseObject(
  'an MR-cluster: name, state, nodes by kind, weight, share, discrimination, queue',
);

const clusterOperations = table({
  'mrc-activate': {
    summary: 'request an MR-cluster with a minimum share of core nodes, its input copied onto them (the admin)',
    args: args({
      name: MrClusterName,
      minNodes: Type.Integer({ description: 'the minimum share of core nodes (EBADCONF below 1)' }),
      input: Type.Optional(PathSchema('a path copied into /mrc/NAME/input')),
    }),
    result: MrClusterRowResult,
    allowed: ['admin'],
    http: { method: 'POST', path: '/mr-clusters' },
  },
  'mrc-list': {
    summary: 'the MR-clusters, the free nodes and the discrimination of the last interval',
    args: args({}),
    result: looseObject('clusters, freeNodes, globalDiscrimination'),
    allowed: ['any'],
    http: { method: 'GET', path: '/mr-clusters' },
  },
  'mrc-deactivate': {
    summary: 'deactivate an idle MR-cluster (the admin)',
    args: args({ name: MrClusterName }),
    result: MrClusterRowResult,
    allowed: ['admin'],
    http: { method: 'DELETE', path: '/mr-clusters/{name}' },
  },
  fsck: {
    summary: "the block report of the files under path (default /), as HDFS's fsck",
    args: args({ path: Type.Optional(PathSchema()) }),
    result: looseObject(
      'files with their blocks and live replicas; under-replicated and missing blocks; totals; healthy',
    ),
    allowed: ['any'],
    http: { method: 'GET', path: '/fsck' },
  },
});

/** The NameNode's rows as the connection's user; listing and status are on /api/v1 too. */
const FS_ROUTES: Readonly<Record<string, HttpRoute>> = {
  'fs-list': { method: 'GET', path: '/fs/list' },
  'fs-stat': { method: 'GET', path: '/fs/stat' },
  'fs-getBlocks': { method: 'GET', path: '/fs/blocks' },
};
function withRoutes<T extends Record<string, Operation>>(rows: T): T {
  return Object.fromEntries(
    Object.entries(rows).map(([name, row]) => [name, FS_ROUTES[name] ? { ...row, http: FS_ROUTES[name] } : row]),
  ) as T;
}
const fsOperations = withRoutes(table(namenodeRows('fs-', ['any'])));

const UserName = Type.String({
  pattern: '^[A-Za-z_][A-Za-z0-9_.@-]{0,63}$',
  description: 'a user name: 1-64 characters of [A-Za-z0-9_.@-], starting with a letter or _',
  'x-minimr-error-code': 'EBADREQUEST',
});
export type UserListing = Static<typeof UserListing>;
const UserListing = Type.Object({
  name: Type.String(),
  createdAt: Type.Number(),
  revokedAt: Type.Optional(Type.Number()),
});

/** Users and their credentials (auth.ts, user-store.ts): the admin's. */
const userOperations = table({
  'user-add': {
    summary: "give user a credential (a new key; any key it had stops working); answers the credential file's content",
    args: args({ name: UserName }),
    result: Type.Object({ user: Type.String(), key: Type.String() }),
    allowed: ['admin'],
  },
  'user-list': {
    summary: 'the users with credentials, current and revoked',
    args: args({}),
    result: Type.Array(UserListing),
    allowed: ['admin'],
    http: { method: 'GET', path: '/users' },
  },
  'delegation-token': {
    summary:
      "a WebHDFS delegation token of the calling user (HDFS's `delegation=`): what a job or tool is given to act " +
      'as that user on /webhdfs/v1 without their key; it ends when their key changes or the JobTracker restarts',
    args: args({}),
    result: Type.Object({ token: Type.String() }),
    allowed: ['any'],
  },
  'user-revoke': {
    summary: "revoke a user's credential: its connections are closed and it can no longer sign in",
    args: args({ name: UserName }),
    result: UserListing,
    allowed: ['admin'],
    http: { method: 'DELETE', path: '/users/{name}' },
  },
});

export const CLIENT_PROTOCOL = {
  ...jobOperations,
  ...profileOperations,
  ...clusterOperations,
  ...fsOperations,
  ...userOperations,
};
export type ClientProtocol = typeof CLIENT_PROTOCOL;
/** The user rows, served apart from the rest (user-store.ts). */
export type UserOperations = typeof userOperations;

export { Done, type TSchema };

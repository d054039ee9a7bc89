/**
 * WebHDFS (Hadoop 3's REST API of HDFS) as a table: the operations the JobTracker serves at
 * `/webhdfs/v1/<path>?op=NAME` over the block store, each a row with its HTTP method, its query
 * parameters' schema (validated by the one dispatcher, as every other row) and who may call it.
 * Every row is `any`: the NameNode checks each path's owner, group and mode as the caller, as it
 * does for `fs-*`. What a row answers is a `WebHdfsAnswer`: the HTTP status and JSON body WebHDFS
 * specifies, a redirect (OPEN and CREATE, as a NameNode redirects to a DataNode), or bytes the
 * handler streamed itself. The server is jobtracker/webhdfs-server.ts.
 */
import { PathSchema, Type } from './schema.js';
import { args, Done, table } from './operations.js';
import { NAMENODE_OPERATIONS } from './namenode-operations.js';
import { BlockInfoResult, FileStatusResult } from './types.js';

export type WebHdfsMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** What a WebHDFS row answers. */
export type WebHdfsAnswer =
  | { readonly kind: 'json'; readonly status: number; readonly body: unknown }
  | { readonly kind: 'redirect'; readonly location: string }
  | { readonly kind: 'created'; readonly location: string }
  /** The handler wrote the response itself (OPEN's bytes). */
  | { readonly kind: 'streamed' };

const Answer = Type.Unsafe<WebHdfsAnswer>(
  Type.Unknown({ description: 'a WebHDFS response (status, JSON body or redirect)' }),
);
const Path = PathSchema('the path, from the URL');
const NonNegative = (description: string) => Type.Integer({ minimum: 0, description });
const BooleanParam = (description: string) => Type.Boolean({ description });
/** HDFS's octal permission: `755`, `1777`. */
const Permission = Type.String({ pattern: '^[0-1]?[0-7]{1,3}$', description: 'octal permission, as 755' });
/**
 * A signed grant the first step of OPEN or CREATE puts in its redirect (as a DataNode URL carries a
 * block token): the second step is authorized by it alone, for that operation on that path.
 */
const DataToken = Type.String({ maxLength: 4096, description: 'the redirect grant of OPEN or CREATE' });
const WriteSession = Type.String({ minLength: 1, maxLength: 64, description: 'a write session webhdfs-create opened' });

export const WEBHDFS_PROTOCOL = table({
  GETFILESTATUS: {
    summary: "a path's FileStatus",
    args: args({ path: Path }),
    allowed: ['any'],
    result: Answer,
  },
  LISTSTATUS: {
    summary: "a directory's FileStatuses (a file: itself)",
    args: args({ path: Path }),
    allowed: ['any'],
    result: Answer,
  },
  GETCONTENTSUMMARY: {
    summary: 'directories, files and bytes under a path',
    args: args({ path: Path }),
    allowed: ['any'],
    result: Answer,
  },
  OPEN: {
    summary: "a file's bytes from offset, length of them: 307 to where they are served",
    args: args({
      path: Path,
      offset: Type.Optional(NonNegative('first byte')),
      length: Type.Optional(NonNegative('bytes to read')),
      noredirect: Type.Optional(BooleanParam('answer the redirect as JSON {Location}')),
      datatoken: Type.Optional(DataToken),
    }),
    allowed: ['any'],
    result: Answer,
  },
  CREATE: {
    summary: 'a new file: 307 to where its bytes are PUT, then 201',
    args: args({
      path: Path,
      overwrite: Type.Optional(BooleanParam('replace an existing file')),
      permission: Type.Optional(Permission),
      replication: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
      blocksize: Type.Optional(Type.Integer({ minimum: 1 })),
      noredirect: Type.Optional(BooleanParam('answer the redirect as JSON {Location}')),
      datatoken: Type.Optional(DataToken),
    }),
    allowed: ['any'],
    result: Answer,
  },
  MKDIRS: {
    summary: 'a directory and its missing parents',
    args: args({ path: Path, permission: Type.Optional(Permission) }),
    allowed: ['any'],
    result: Answer,
  },
  RENAME: {
    summary: 'renames a path (into a directory that exists: inside it, as HDFS)',
    args: args({ path: Path, destination: PathSchema('where to move it') }),
    allowed: ['any'],
    result: Answer,
  },
  DELETE: {
    summary: 'removes a path (a non-empty directory: with recursive=true)',
    args: args({ path: Path, recursive: Type.Optional(BooleanParam('remove a directory with its contents')) }),
    allowed: ['any'],
    result: Answer,
  },
  GETDELEGATIONTOKEN: {
    summary: 'a token that delegation= takes in place of credentials (signed in with HTTP Basic only)',
    args: args({
      path: Path,
      renewer: Type.Optional(Type.String({ maxLength: 256 })),
      service: Type.Optional(Type.String({ maxLength: 1024 })),
      kind: Type.Optional(Type.String({ maxLength: 256 })),
    }),
    allowed: ['any'],
    result: Answer,
  },
  SETPERMISSION: {
    summary: "sets a path's mode bits (its owner or the admin)",
    args: args({ path: Path, permission: Type.Optional(Permission) }),
    allowed: ['any'],
    result: Answer,
  },
});

export type WebHdfsProtocol = typeof WEBHDFS_PROTOCOL;
export type WebHdfsOperation = keyof WebHdfsProtocol;

/** The HTTP method of each operation, as WebHDFS's API says. */
export const WEBHDFS_METHODS: Readonly<Record<WebHdfsOperation, WebHdfsMethod>> = {
  GETFILESTATUS: 'GET',
  LISTSTATUS: 'GET',
  GETCONTENTSUMMARY: 'GET',
  OPEN: 'GET',
  CREATE: 'PUT',
  MKDIRS: 'PUT',
  RENAME: 'PUT',
  DELETE: 'DELETE',
  GETDELEGATIONTOKEN: 'GET',
  SETPERMISSION: 'PUT',
};

export const WEBHDFS_PREFIX = '/webhdfs/v1';

/**
 * What a worker asks its JobTracker when it serves the second step of an OPEN redirected to its
 * data port: with the grant the client brought (checked there as on the JobTracker's own port),
 * the blocks of the range granted, with their read tokens, as the grant's user may read them.
 */
export const WEBHDFS_DATANODE_ROWS = table({
  'webhdfs-open': {
    summary: "the blocks of the byte range a WebHDFS OPEN's redirect grant allows, for the worker serving it",
    args: args({
      path: Path,
      offset: Type.Optional(NonNegative('first byte')),
      length: Type.Optional(NonNegative('bytes to read')),
      grant: DataToken,
    }),
    result: Type.Object(
      {
        fileLength: Type.Integer({ minimum: 0 }),
        start: Type.Integer({ minimum: 0 }),
        end: Type.Integer({ minimum: 0 }),
        blocks: Type.Array(BlockInfoResult, { maxItems: 1_000_000 }),
      },
      { additionalProperties: false },
    ),
    allowed: ['worker'],
  },
  'webhdfs-create': {
    summary:
      "starts the file a WebHDFS CREATE's redirect grant allows, for the worker taking its bytes: " +
      'a write session for the blocks that follow',
    args: args({
      path: Path,
      /** The redirect's query as the client sent it (overwrite, permission, ...): the grant signs them. */
      params: Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 4096 }), { maxProperties: 32 }),
      grant: DataToken,
    }),
    result: Type.Object(
      { session: WriteSession, blockSize: Type.Integer(), replication: Type.Integer() },
      { additionalProperties: false },
    ),
    allowed: ['worker'],
  },
  'webhdfs-allocate-block': {
    summary: 'the next block of the file of a WebHDFS write session',
    args: args({ ...NAMENODE_OPERATIONS.allocateBlock.args, session: WriteSession }),
    result: NAMENODE_OPERATIONS.allocateBlock.result,
    allowed: ['worker'],
  },
  'webhdfs-commit-block': {
    summary: 'records a block of the file of a WebHDFS write session',
    args: args({ ...NAMENODE_OPERATIONS.commitBlock.args, session: WriteSession }),
    result: Done,
    allowed: ['worker'],
  },
  'webhdfs-complete': {
    summary: 'closes the file of a WebHDFS write session (readers see it), ends the session; its status',
    args: args({ path: Path, session: WriteSession }),
    result: FileStatusResult,
    allowed: ['worker'],
  },
  'webhdfs-abandon': {
    summary: 'drops the file of a WebHDFS write session and ends the session',
    args: args({ path: Path, session: WriteSession }),
    result: Done,
    allowed: ['worker'],
  },
});

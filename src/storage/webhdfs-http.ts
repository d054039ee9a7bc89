/**
 * WebHDFS's error answers, for the NameNode side (the JobTracker's /webhdfs/v1) and the DataNode
 * side (a worker's data port serving OPEN's second step) alike:
 * `{"RemoteException":{"exception","javaClassName","message"}}` with the statuses of Hadoop's
 * ExceptionHandler: FileNotFoundException 404, other IOExceptions (AccessControlException,
 * FileAlreadyExistsException, ...) 403, IllegalArgumentException 400; 401 without credentials.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { MinimrError, serializeError } from '../errors.js';
import type { Logger } from '../log.js';

export interface RemoteException {
  readonly status: number;
  readonly exception: string;
  readonly javaClassName: string;
}

const IO_EXCEPTION: RemoteException = { status: 403, exception: 'IOException', javaClassName: 'java.io.IOException' };
const ILLEGAL_ARGUMENT: RemoteException = {
  status: 400,
  exception: 'IllegalArgumentException',
  javaClassName: 'java.lang.IllegalArgumentException',
};
const FILE_NOT_FOUND: RemoteException = {
  status: 404,
  exception: 'FileNotFoundException',
  javaClassName: 'java.io.FileNotFoundException',
};
export const SECURITY_EXCEPTION: RemoteException = {
  status: 403,
  exception: 'SecurityException',
  javaClassName: 'java.lang.SecurityException',
};

/** minimr's error codes as the Java exceptions HDFS raises for them. */
export const EXCEPTION_OF_CODE: Readonly<Record<string, RemoteException>> = {
  ENOENT: FILE_NOT_FOUND,
  EISDIR: FILE_NOT_FOUND,
  EPERM: {
    status: 403,
    exception: 'AccessControlException',
    javaClassName: 'org.apache.hadoop.security.AccessControlException',
  },
  EAUTH: { ...SECURITY_EXCEPTION, status: 401 },
  ETOKEN: {
    status: 403,
    exception: 'InvalidToken',
    javaClassName: 'org.apache.hadoop.security.token.SecretManager$InvalidToken',
  },
  EEXIST: {
    status: 403,
    exception: 'FileAlreadyExistsException',
    javaClassName: 'org.apache.hadoop.fs.FileAlreadyExistsException',
  },
  ENOTEMPTY: {
    status: 403,
    exception: 'PathIsNotEmptyDirectoryException',
    javaClassName: 'org.apache.hadoop.fs.PathIsNotEmptyDirectoryException',
  },
  ENOTDIR: {
    status: 403,
    exception: 'ParentNotDirectoryException',
    javaClassName: 'org.apache.hadoop.fs.ParentNotDirectoryException',
  },
  EBADPATH: ILLEGAL_ARGUMENT,
  EPROTOCOL: ILLEGAL_ARGUMENT,
  EBADREQUEST: ILLEGAL_ARGUMENT,
};

/** Answers `err` as WebHDFS does; a fault that is not a MinimrError is logged with a reference. */
export function sendRemoteException(res: ServerResponse, err: unknown, logger: Logger): void {
  if (res.headersSent) {
    // Bytes are already out (OPEN): the client must not take a short body for the whole.
    res.destroy();
    if (!(err instanceof MinimrError)) logger.error({ err: serializeError(err) }, 'WebHDFS read failed');
    return;
  }
  let kind: RemoteException;
  let message: string;
  if (err instanceof MinimrError) {
    kind =
      err.details?.exception === 'SecurityException'
        ? SECURITY_EXCEPTION
        : (EXCEPTION_OF_CODE[err.code] ?? IO_EXCEPTION);
    message = err.message;
  } else {
    const reference = randomBytes(4).toString('hex');
    logger.error({ err: serializeError(err), reference }, 'WebHDFS request failed');
    kind = { status: 500, exception: 'RuntimeException', javaClassName: 'java.lang.RuntimeException' };
    message = `internal error (reference ${reference} in the server's log)`;
  }
  const headers: Record<string, string> =
    kind.status === 401 ? { 'www-authenticate': 'Basic realm="minimr", charset="UTF-8"' } : {};
  sendWebHdfsJson(
    res,
    kind.status,
    { RemoteException: { exception: kind.exception, javaClassName: kind.javaClassName, message } },
    headers,
  );
}

export function sendWebHdfsJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...headers,
  });
  res.end(text);
}

/** The path a URL names under /webhdfs/v1, decoded; EBADREQUEST for bad percent-encoding. */
export function webHdfsPathOf(pathname: string): string {
  const rest = pathname.slice('/webhdfs/v1'.length);
  let decoded: string;
  try {
    decoded = rest
      .split('/')
      .map((s) => decodeURIComponent(s))
      .join('/');
  } catch {
    throw new MinimrError('EBADREQUEST', `bad URL encoding in ${JSON.stringify(rest)}`);
  }
  const trimmed = decoded.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

/** Waits until a response that answered `write` with false can take more (a client that left: EBADREQUEST). */
export function waitDrain(res: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    const onClose = (): void => reject(new MinimrError('EBADREQUEST', 'the client closed the connection'));
    res.once('close', onClose);
    res.once('drain', () => {
      res.off('close', onClose);
      resolve();
    });
  });
}

/**
 * Where a job's input or output lives, as a user writes it: a plain absolute path (`/in/words`) or
 * `minimr:///in/words` is minimr's block store; `file:///data/in` a directory every worker reads;
 * `s3://bucket/prefix` S3 or an S3-compatible store; `webhdfs://host:port/path` an HDFS cluster's
 * WebHDFS port, and `hdfs://host:port/path` the same (minimr speaks only WebHDFS to HDFS, as
 * Hadoop's own `webhdfs://` filesystem does; say the HTTP port).
 */
import { posix } from 'node:path';
import { MinimrError } from '../../errors.js';
import type { StoreLocation, StoreScheme } from './types.js';

const URI_RE = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)([^?#]*)$/;

function badUri(uri: string, why: string): never {
  throw new MinimrError('EBADPATH', `${uri}: ${why}`, { path: uri });
}

/** Whether `uri` names a store other than the block store (it has a scheme other than minimr). */
export function isExternalUri(uri: string): boolean {
  const m = URI_RE.exec(uri);
  return m !== null && m[1]!.toLowerCase() !== 'minimr';
}

/** A location as the rest of minimr takes it: a block-store path plain (`minimr:///a` is `/a`), other URIs as given. */
export function normaliseLocation(uri: string): string {
  return uri.startsWith('/') || isExternalUri(uri) ? uri : parseStoreUri(uri).path;
}

/** Parses a location; EBADPATH names what is wrong with a malformed one. */
export function parseStoreUri(uri: string): StoreLocation {
  if (uri.startsWith('/'))
    return { scheme: 'minimr', authority: '', path: normalise(uri, uri), uri: normalise(uri, uri) };
  const m = URI_RE.exec(uri);
  if (!m) {
    return badUri(
      uri,
      'not an absolute path or a URI: give /path (the block store), file:///path, s3://bucket/key or ' +
        'webhdfs://host:port/path',
    );
  }
  const given = m[1]!.toLowerCase();
  const authority = m[2]!;
  const rawPath = m[3] === '' ? '/' : m[3]!;
  const scheme: StoreScheme | undefined =
    given === 'hdfs' ? 'webhdfs' : (['minimr', 'file', 's3', 'webhdfs'] as const).find((s) => s === given);
  if (scheme === undefined) {
    return badUri(uri, `unknown scheme ${given}: minimr reads minimr://, file://, s3://, webhdfs:// and hdfs://`);
  }
  const path = normalise(uri, rawPath);
  switch (scheme) {
    case 'minimr':
    case 'file':
      if (authority !== '' && authority !== 'localhost')
        badUri(uri, `${scheme}:// takes no host (write ${scheme}:///absolute/path)`);
      return { scheme, authority: '', path, uri: scheme === 'minimr' ? path : `file://${path}` };
    case 's3':
      if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(authority))
        badUri(uri, 'an s3:// URI starts with a bucket name (3-63 lower-case letters, digits, dots, hyphens)');
      return { scheme, authority, path, uri: `s3://${authority}${path === '/' ? '' : path}` };
    default:
      if (!/^[A-Za-z0-9.-]+:\d{1,5}$/.test(authority))
        badUri(uri, `a ${given}:// URI names the NameNode's WebHDFS host and port (${given}://host:9870/path)`);
      return { scheme, authority, path, uri: `webhdfs://${authority}${path}` };
  }
}

function normalise(uri: string, path: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return badUri(uri, 'malformed %-escape');
  }
  if (decoded.split('/').includes('..')) badUri(uri, "'..' is not allowed");
  const p = posix.normalize(decoded);
  return p.length > 1 ? p.replace(/\/+$/, '') : '/';
}

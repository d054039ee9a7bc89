import { MinimrError } from '../errors.js';

/**
 * HDFS's limits on names (dfs.namenode.fs-limits.max-component-length; FSDirectory's
 * MAX_PATH_LENGTH and MAX_PATH_DEPTH): past them a name costs memory and time to every listing
 * and check, and no real file needs it.
 */
export const MAX_PATH_COMPONENT_BYTES = 255;
export const MAX_PATH_LENGTH = 8000;
export const MAX_PATH_DEPTH = 1000;

/**
 * The NameNode takes only canonical paths, so one file never has two names (`/a//b`, `/a/./b`) and a
 * rename or remove can compare prefixes safely.
 */
export function validatePath(path: unknown): string {
  if (typeof path !== 'string' || path.length === 0) {
    throw new MinimrError('EBADPATH', 'path must be a non-empty string', { path: String(path) });
  }
  if (!path.startsWith('/')) throw new MinimrError('EBADPATH', `path is not absolute: ${path}`, { path });
  if (path === '/') return path;
  if (path.includes('\0')) throw new MinimrError('EBADPATH', 'path contains a NUL byte', { path });
  if (path.length > MAX_PATH_LENGTH) {
    throw new MinimrError(
      'EBADPATH',
      `path of ${path.length} characters is longer than the limit of ${MAX_PATH_LENGTH}: ${shorten(path)}`,
      { path: shorten(path), limit: MAX_PATH_LENGTH },
    );
  }
  if (path.endsWith('/')) throw new MinimrError('EBADPATH', `path has a trailing slash: ${path}`, { path });
  const segments = path.slice(1).split('/');
  if (segments.length > MAX_PATH_DEPTH) {
    throw new MinimrError(
      'EBADPATH',
      `path of ${segments.length} levels is deeper than the limit of ${MAX_PATH_DEPTH}: ${shorten(path)}`,
      { path: shorten(path), limit: MAX_PATH_DEPTH },
    );
  }
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new MinimrError('EBADPATH', `path is not normalized: ${path}`, { path });
    }
    const bytes = Buffer.byteLength(segment);
    if (bytes > MAX_PATH_COMPONENT_BYTES) {
      throw new MinimrError(
        'EBADPATH',
        `path component of ${bytes} bytes is longer than the limit of ${MAX_PATH_COMPONENT_BYTES}: ${shorten(path)}`,
        { path: shorten(path), limit: MAX_PATH_COMPONENT_BYTES },
      );
    }
  }
  return path;
}

/** A path too long to repeat whole in a message: its start and end. */
function shorten(path: string): string {
  return path.length <= 200 ? path : `${path.slice(0, 100)}...${path.slice(-60)}`;
}

export function parentOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

export function joinPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

/** True when `path` is `ancestor` itself or lies below it. */
export function isSameOrBelow(path: string, ancestor: string): boolean {
  if (ancestor === '/') return true;
  return path === ancestor || path.startsWith(`${ancestor}/`);
}

/**
 * Whether a file is input by its name (the last component of a path or URI): as Hadoop's
 * FileInputFormat, names starting with _ or . (`_SUCCESS`, a writer's hidden temporary) are not.
 */
export function isInputName(pathOrUri: string): boolean {
  return !/^[_.]/.test(pathOrUri.replace(/\/+$/, '').split('/').pop() ?? '');
}

import { MinimrError } from '../errors.js';

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
  if (path.endsWith('/')) throw new MinimrError('EBADPATH', `path has a trailing slash: ${path}`, { path });
  for (const segment of path.slice(1).split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new MinimrError('EBADPATH', `path is not normalized: ${path}`, { path });
    }
  }
  return path;
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

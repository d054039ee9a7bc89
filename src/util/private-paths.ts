/**
 * Errors leave a host (a worker's data port, a JobTracker's replies, an attempt's report) carrying
 * messages written for the operator: `disk full while writing block blk_7 in /srv/minimr/worker/blocks`.
 * A client has no use for the server's file layout and should not learn it, so at each boundary the
 * directories this process keeps private are replaced by a placeholder; the full text stays in the
 * process's own log. A process registers its directories as it starts (a process is one trust domain:
 * in tests, a JobTracker and its clients share one).
 */
import type { SerializedError } from '../errors.js';

const privateDirs = new Map<string, string>();

/** From now on, `dir` and what is under it are shown to peers as `placeholder` (e.g. "worker-1's data directory"). */
export function registerPrivateDir(dir: string, placeholder: string): void {
  const trimmed = dir.length > 1 ? dir.replace(/\/+$/, '') : dir;
  if (trimmed.length > 1) privateDirs.set(trimmed, placeholder);
}

export function unregisterPrivateDir(dir: string): void {
  privateDirs.delete(dir.length > 1 ? dir.replace(/\/+$/, '') : dir);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `text` with every private directory, and the path under it, replaced by its placeholder in brackets. */
export function redactPrivatePaths(text: string): string {
  let out = text;
  // Longest first: a directory inside another is named by its own placeholder.
  for (const [dir, placeholder] of [...privateDirs].sort((a, b) => b[0].length - a[0].length)) {
    if (!out.includes(dir)) continue;
    out = out.replace(
      new RegExp(`(?<![\\w./-])${escapeRegExp(dir)}(?![^/\\s'"\`,;:()\\]])(?:/[^\\s'"\`,;:()\\]]*)?`, 'g'),
      `[${placeholder}]`,
    );
  }
  return out;
}

/** An error as a peer may see it: message and string details without private paths, and no stack. */
export function publicError(err: SerializedError): SerializedError {
  const details = err.details
    ? Object.fromEntries(
        Object.entries(err.details).map(([k, v]) => [k, typeof v === 'string' ? redactPrivatePaths(v) : v]),
      )
    : undefined;
  return { code: err.code, message: redactPrivatePaths(err.message), ...(details ? { details } : {}) };
}

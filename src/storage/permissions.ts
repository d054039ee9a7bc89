/**
 * Owners and mode bits of files and directories, as HDFS has them: every inode has an owner, a
 * group and rwx bits for owner, group and others, and directories may have the sticky bit (only an
 * entry's owner, the directory's owner or the superuser may remove or rename an entry of it).
 * The superuser (the cluster's admin) passes every check. A user's only group is the group of its
 * own name (there is no group directory yet), so group bits apply to a group named after a user.
 *
 * New directories are 0755 and new files 0644 (HDFS's defaults with umask 022); the root is 01777,
 * like /tmp, so that every user may create top-level paths and remove only their own.
 */
import { MinimrError } from '../errors.js';

/** Who asks the NameNode. */
export interface Caller {
  readonly user: string;
  readonly superuser: boolean;
}

export interface Ownership {
  readonly owner: string;
  readonly group: string;
  /** Permission bits: 0o7777 at most (sticky 0o1000, rwx for owner, group, others). */
  readonly mode: number;
}

export type Access = 'read' | 'write' | 'execute';

const STICKY_BIT = 0o1000;
export const DEFAULT_DIR_MODE = 0o755;
export const DEFAULT_FILE_MODE = 0o644;
export const ROOT_MODE = 0o1777;
export const DEFAULT_GROUP = 'supergroup';

const USER_NAME = /^[A-Za-z_][A-Za-z0-9_.@-]{0,63}$/;

/** A user or group name as the cluster stores and prints it; EBADCONF otherwise. */
/** Whether `user` is a name a connection, an owner or a web sign-in may use. */
export function isValidUserName(user: unknown): user is string {
  return typeof user === 'string' && USER_NAME.test(user);
}

export function validateUserName(user: unknown, what = 'user name'): string {
  if (!isValidUserName(user)) {
    throw new MinimrError(
      'EBADCONF',
      `${what} must be 1-64 characters of [A-Za-z0-9_.@-], starting ` +
        `with a letter or _, ` +
        `got ${JSON.stringify(String(user)).slice(0, 80)}`,
    );
  }
  return user;
}

const ACCESS_BIT: Readonly<Record<Access, number>> = { read: 4, write: 2, execute: 1 };

/** Whether `caller` has `access` to an inode with these owner and mode bits. */
function permits(caller: Caller, inode: Ownership, access: Access): boolean {
  if (caller.superuser) return true;
  const shift = caller.user === inode.owner ? 6 : caller.user === inode.group ? 3 : 0;
  return ((inode.mode >> shift) & ACCESS_BIT[access]) !== 0;
}

export function requireAccess(caller: Caller, inode: Ownership, path: string, ...accesses: Access[]): void {
  for (const access of accesses) {
    if (!permits(caller, inode, access)) {
      throw new MinimrError(
        'EPERM',
        `permission denied: user ${caller.user} may ` +
          `not ${access === 'execute' ? 'enter' : access} ${path} ` +
          `(owner ${inode.owner}, group ${inode.group}, ` +
          `mode ${formatMode('dir', inode.mode).slice(1)})`,
        {
          path,
        },
      );
    }
  }
}

/**
 * In a sticky directory, only the entry's owner, the directory's owner and the superuser may remove or rename an entry.
 */
export function requireStickyOwnership(caller: Caller, dir: Ownership, entry: Ownership, path: string): void {
  if (caller.superuser || (dir.mode & STICKY_BIT) === 0 || caller.user === entry.owner || caller.user === dir.owner)
    return;
  throw new MinimrError(
    'EPERM',
    `permission denied: ${path} belongs to ${entry.owner}; user ${caller.user} may not remove or move it`,
    { path },
  );
}

/** `ls -l`'s form: `drwxr-xr-x`, with `t`/`T` for the sticky bit. */
export function formatMode(type: 'file' | 'dir', mode: number): string {
  const rwx = (bits: number) => `${bits & 4 ? 'r' : '-'}${bits & 2 ? 'w' : '-'}${bits & 1 ? 'x' : '-'}`;
  let text = `${type === 'dir' ? 'd' : '-'}${rwx(mode >> 6)}${rwx(mode >> 3)}${rwx(mode)}`;
  if (mode & STICKY_BIT) text = text.slice(0, 9) + (mode & 1 ? 't' : 'T');
  return text;
}

/** An octal mode as `fs chmod` takes it (`755`, `1777`, `0644`). */
export function parseMode(text: unknown): number {
  if (typeof text === 'number' && Number.isInteger(text) && text >= 0 && text <= 0o1777) return text;
  if (typeof text !== 'string' || !/^[0-7]{1,4}$/.test(text)) {
    throw new MinimrError(
      'EBADCONF',
      `mode must be 1-4 octal digits such as 755 or 1777, got ${JSON.stringify(String(text)).slice(0, 40)}`,
    );
  }
  const mode = Number.parseInt(text, 8);
  if (mode > 0o1777)
    throw new MinimrError('EBADCONF', `mode ${text}: only the sticky bit (1000) and rwx bits are supported`);
  return mode;
}

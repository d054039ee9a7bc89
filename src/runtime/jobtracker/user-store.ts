/**
 * The users the admin has given credentials (`minimr user add/list/revoke`), kept in
 * `<dir>/users.json` (mode 0600, beside the cluster secret: it holds every user's key, so it is as
 * private as the secret). Each user has one current key; `add` for a user who has one replaces it
 * (the old credential stops working), `revoke` drops the key and keeps the name with the time, so
 * `user list` says who was revoked and when. The file is small (one line per user) and rewritten
 * whole on every change, through a temporary file and a rename, so a crash leaves the old or the
 * new version, never half of one.
 */
import { chmod, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MinimrError } from '../../errors.js';
import { validateUserName } from '../../storage/index.js';
import type { Logger } from '../../log.js';
import {
  CLOSE_AUTH_FAILED,
  newUserCredential,
  userKeyBytes,
  type Handlers,
  type RpcPeer,
  type UserCredential,
  type UserOperations,
} from '../wire/index.js';

interface UserRecord {
  /** Absent once revoked. */
  key?: string;
  createdAt: number;
  revokedAt?: number;
}

/** One user as `user list` shows it. */
export interface UserListing {
  readonly name: string;
  readonly createdAt: number;
  readonly revokedAt?: number;
}

export class UserStore {
  private readonly path: string;
  private users = new Map<string, UserRecord>();
  /** Keys decoded once: every handshake of a user looks its key up. */
  private readonly keys = new Map<string, Buffer>();

  constructor(dir: string) {
    this.path = join(dir, 'users.json');
  }

  async open(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new MinimrError('EBADCONF', `cannot read the user list ${this.path}: ${(err as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new MinimrError('EBADCONF', `the user list ${this.path} is not JSON: restore it or remove it`);
    }
    const records = (parsed as { users?: Record<string, UserRecord> }).users ?? {};
    for (const [name, record] of Object.entries(records)) {
      validateUserName(name, `a user in ${this.path}`);
      if (record.key !== undefined) this.keys.set(name, userKeyBytes(record.key, `user ${name} in ${this.path}`));
      this.users.set(name, record);
    }
  }

  /** The current key of `user`; undefined when it has none (unknown or revoked). */
  keyOf(user: string): Buffer | undefined {
    return this.keys.get(user);
  }

  /** A new credential for `name` (replacing any key it had). */
  async add(name: string, now: number): Promise<UserCredential> {
    const credential = newUserCredential(name);
    this.users.set(credential.user, { key: credential.key, createdAt: now });
    this.keys.set(credential.user, userKeyBytes(credential.key, 'a new credential'));
    await this.save();
    return credential;
  }

  list(): UserListing[] {
    return [...this.users.entries()]
      .map(([name, r]) => ({
        name,
        createdAt: r.createdAt,
        ...(r.revokedAt !== undefined ? { revokedAt: r.revokedAt } : {}),
      }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async revoke(name: string, now: number): Promise<UserListing> {
    const record = this.users.get(name);
    if (!record)
      throw new MinimrError('ENOUSER', `no user ${name} has a credential (\`minimr user list\` shows them)`, {
        user: name,
      });
    if (record.revokedAt === undefined) {
      delete record.key;
      record.revokedAt = now;
      this.keys.delete(name);
      await this.save();
    }
    return { name, createdAt: record.createdAt, revokedAt: record.revokedAt };
  }

  private async save(): Promise<void> {
    const temporary = `${this.path}.tmp`;
    const body = JSON.stringify({ users: Object.fromEntries(this.users) }, null, 1);
    await writeFile(temporary, `${body}\n`, { mode: 0o600 });
    await chmod(temporary, 0o600);
    await rename(temporary, this.path);
  }
}

/**
 * The user rows of the client link over the store, and the credential connections open: revoking
 * a user closes theirs at once (the daemons' secret connections naming the same user stay).
 */
export class UserAccounts {
  private readonly open = new Set<RpcPeer>();

  constructor(
    readonly store: UserStore,
    private readonly clock: () => number,
    private readonly logger: Logger,
    /** A WebHDFS delegation token of `user` (webhdfs-server.ts). */
    private readonly delegationTokenOf: (user: string) => string,
  ) {}

  /** A new connection: once authenticated with a credential, it is closed when its user is revoked. */
  connected(peer: RpcPeer): void {
    this.open.add(peer);
    void peer.closed.then(() => this.open.delete(peer));
  }

  handlers(): Handlers<UserOperations, unknown> {
    return {
      'user-add': async ({ name }, { caller }) => {
        const credential = await this.store.add(name, this.clock());
        this.logger.info({ user: name, by: caller.user }, 'credential issued');
        return credential;
      },
      'user-list': () => this.store.list(),
      'delegation-token': (_args, { caller }) => ({ token: this.delegationTokenOf(caller.user) }),
      'user-revoke': async ({ name }, { caller }) => {
        const listing = await this.store.revoke(name, this.clock());
        for (const peer of this.open) {
          if (peer.user === name && peer.authenticatedVia === 'credential')
            peer.close(CLOSE_AUTH_FAILED, `EAUTH: the credential of user ${name} was revoked`);
        }
        this.logger.info({ user: name, by: caller.user }, 'credential revoked');
        return listing;
      },
    };
  }
}

/**
 * What a task process may touch (issue 34, item 3). Job code runs in task processes, and a job's
 * code is whatever its submitter wrote: it must not reach the worker's keys (the cluster secret, its
 * join token, the block key) nor other jobs' data. So a task process
 *
 * - gets no key: its environment has none of the worker's MINIMR_* settings (a join token or a
 *   secret file named there), and what it is told (its config, the attempt's spec) holds only the
 *   job's shuffle secret and per-block tokens the NameNode scoped to the job's owner;
 * - runs under Node's permission model (`--experimental-permission`), which may read the runtime's
 *   code, its job's sandbox directory (the job module, a scratch `work` directory, the block files
 *   its attempts read, linked there by the worker) and the job's map outputs, and write only `work`
 *   and the job's map outputs. The worker's directory, secret files, `/proc` of any process (its own
 *   status and clear_refs aside), other jobs' directories: ERR_ACCESS_DENIED. No child processes, no
 *   worker threads; addons (native code, outside the model) only the LZ4 codec's and msgpackr's
 *   (task-process.ts guards process.dlopen);
 * - where the worker runs as root, runs as an unprivileged account: the job owner's when this host
 *   has one with a uid of at least MIN_OWNER_UID (as Hadoop's LinuxContainerExecutor), else the
 *   worker's `--task-user` (default `nobody`); the directories it writes are that account's.
 *
 * Permissions are fixed when a process starts: a task process runs only one job's attempts (reused
 * warm between them). It is forked for its job (a worker may start one for a job whose first attempt
 * started elsewhere: `warm-job`), or it is a worker's *spare*: forked, before any job, in a sandbox
 * of its own (`spare-<n>/`, laid out as a job's), the first job launched on the worker without a
 * process adopts it, and the spare's sandbox becomes the job's. A spare may read and write what any
 * process of that job may, and nothing else: its sandbox, and its job's map outputs through
 * `spare-<n>/shuffle/<jobId>`, a link the worker makes at adoption (a task cannot make a link that
 * leads outside what it may touch: Node's permission model refuses it). A fork costs ~150 ms; a job
 * launched on a worker with a spare starts without one (Hadoop's and Spark's executors exist
 * before their tasks too).
 *
 * Sandbox layout, `<dataDir>/sandbox/<jobId>/`:
 *   job-<hash>.mjs               the job module (a hard link to the worker's cached copy)
 *   node_modules/minimr/         a package re-exporting the running engine's API ('minimr' imports)
 *   work/                        the processes' cwd and TMPDIR: the only place they may write but the shuffle
 *   input/<attemptId>/           hard links of the local replicas the attempt reads (read-only to it)
 * and, in an adopted spare's, shuffle/<jobId>: a link to the job's map outputs (`<shuffleRoot>/<jobId>`).
 */
import { execFile } from 'node:child_process';
import { appendFile, chmod, chown, copyFile, link, lstat, mkdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { appendFileSync, chmodSync, existsSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, parse, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { MinimrError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { isValidShuffleId } from '../../shuffle/index.js';

/** Local paths an attempt reads and writes in a store outside the block store (file://). */
export interface StorePaths {
  readonly read: readonly string[];
  readonly write: readonly string[];
}

/** A host account a task may run as. */
export interface TaskAccount {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

/** The default `--task-user`: where the worker runs as root and a job's owner has no account here. */
export const DEFAULT_TASK_USER = 'nobody';
/** An owner's account is used only from this uid up (Hadoop's min.user.id): never root or a system account. */
export const MIN_OWNER_UID = 1000;
/** User names looked up on the host: what getent may be given. */
const ACCOUNT_NAME = /^[A-Za-z0-9._][A-Za-z0-9._-]{0,63}$/;

const execFileText = promisify(execFile);

/** The account `name` of this host (getent: local files and NSS alike); undefined when there is none. */
export async function lookupAccount(name: string): Promise<TaskAccount | undefined> {
  if (!ACCOUNT_NAME.test(name)) return undefined;
  let line: string;
  try {
    line = (await execFileText('getent', ['passwd', name], { timeout: 10_000 })).stdout.split('\n')[0] ?? '';
  } catch {
    // exit status 2: no such account (or no getent on this host)
    return undefined;
  }
  const fields = line.split(':');
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (fields[0] !== name || !Number.isInteger(uid) || !Number.isInteger(gid)) return undefined;
  return { name, uid, gid };
}

/** The compiled runtime's root (dist/src): the task process's code and the public API a job imports. */
const RUNTIME_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The package.json of the running engine (the "type" of its .js files). */
const PACKAGE_JSON = fileURLToPath(new URL('../../../../package.json', import.meta.url));

/**
 * The node_modules directories a task process resolves packages in (lz4-napi, msgpackr, typebox):
 * those above the runtime, each as named and as it resolves (a linked node_modules is both).
 */
function packageDirs(): string[] {
  const dirs = new Set<string>();
  for (let d = RUNTIME_ROOT; d !== dirname(d); d = dirname(d)) {
    const candidate = join(d, 'node_modules');
    if (!existsSync(candidate)) continue;
    dirs.add(candidate);
    dirs.add(realpathSync(candidate));
  }
  return [...dirs];
}

/** One job's sandbox on this worker. */
export interface JobSandbox {
  readonly jobId: string;
  readonly dir: string;
  readonly workDir: string;
  readonly inputDir: string;
  /** The job module as the task imports it (inside `dir`). */
  readonly modulePath: string;
  /** The job's map output directory (shuffle/<jobId>). */
  readonly shuffleDir: string;
  /** The account its processes run as; undefined when the worker does not run as root (they run as the worker's). */
  readonly account: TaskAccount | undefined;
  /** A streaming job's: its processes may start child processes (its commands). */
  readonly childProcesses: boolean;
  /**
   * A spare's (jobId ''): the directory of links to map outputs, which its process takes as its
   * shuffle root (the link to its job's is made at adoption); `shuffleDir` is the same directory.
   */
  readonly shuffleLinks?: string;
}

/** What a streaming job's sandbox has besides any job's. */
export interface StreamingSandboxOptions {
  /** The job's shipped files (`--file`), fetched when its sandbox is made: they go in `work`. */
  readonly files: () => Promise<readonly { name: string; data: Uint8Array; executable: boolean }[]>;
}

export interface TaskSandboxesOptions {
  readonly dataDir: string;
  readonly shuffleRoot: string;
  /** `--task-user`: the account of tasks whose owner has none here, when the worker runs as root. */
  readonly taskUser?: string;
  readonly logger: Logger;
}

/** The sandboxes of the jobs that ran here, made on a job's first launch and removed at its clean-up. */
export class TaskSandboxes {
  readonly root: string;
  private readonly byJob = new Map<string, Promise<JobSandbox>>();
  private readonly accounts = new Map<string, Promise<TaskAccount | undefined>>();
  private defaultAccount: TaskAccount | undefined;
  /** Whether tasks run as other accounts than the worker's (the worker runs as root). */
  readonly switchesUser: boolean;
  private readonly codeDirs: string[];
  /** Each job's sandbox directory, once made (a spare's, when the job adopted one). */
  private readonly dirs = new Map<string, string>();
  private sparesMade = 0;

  constructor(private readonly opts: TaskSandboxesOptions) {
    this.root = join(opts.dataDir, 'sandbox');
    this.switchesUser = typeof process.getuid === 'function' && process.getuid() === 0;
    if (opts.taskUser !== undefined && !this.switchesUser)
      throw new MinimrError(
        'EBADCONF',
        `--task-user ${opts.taskUser}: only a worker running as root can run tasks as another user ` +
          '(tasks run as the worker user, under Node permissions)',
      );
    this.codeDirs = [RUNTIME_ROOT, PACKAGE_JSON, ...packageDirs()];
  }

  /** At the worker's start: clears what a previous run left, and lets the task account reach its directories. */
  async init(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
    await mkdir(this.root, { recursive: true });
    if (!this.switchesUser) {
      await chmod(this.root, 0o700);
      return;
    }
    const name = this.opts.taskUser ?? DEFAULT_TASK_USER;
    const account = await lookupAccount(name);
    if (!account)
      throw new MinimrError('EBADCONF', `--task-user ${name}: no such account on this host`, { taskUser: name });
    if (account.uid === 0) throw new MinimrError('EBADCONF', `--task-user ${name}: tasks never run as root`);
    this.defaultAccount = account;
    // The task account enters its own directories only: it may pass through the worker's directory
    // (and what leads to it) without listing it; blocks, logs and the module cache stay the worker's.
    await this.searchableFromRoot(this.opts.dataDir);
    // And it loads the runtime's code, which may sit in a private directory too (a clone in mktemp -d).
    for (const dir of this.codeDirs) await this.searchableFromRoot(realpathSync(dir));
    await chmod(this.opts.dataDir, 0o711);
    await chmod(this.root, 0o711);
    await chmod(this.opts.shuffleRoot, 0o711);
    for (const own of ['blocks', 'logs', 'jobs'])
      await chmod(join(this.opts.dataDir, own), 0o700).catch(() => undefined);
    // Measurements on one machine: the tasks append their steps to the phase trace as well.
    const trace = process.env.MINIMR_PHASE_TRACE;
    if (trace) {
      await appendFile(trace, '');
      await chmod(trace, 0o666);
      await this.searchableFromRoot(trace);
    }
  }

  /**
   * Adds search permission for others to `dir`'s ancestors that lack it (e.g. a private temp dir),
   * saying so: search only, so the task account passes through them without listing them.
   */
  private async searchableFromRoot(dir: string): Promise<void> {
    const { root } = parse(dir);
    for (let d = dirname(dir); d !== root && d !== dirname(d); d = dirname(d)) {
      const s = await stat(d);
      if ((s.mode & 0o001) !== 0) continue;
      await chmod(d, (s.mode & 0o7777) | 0o001);
      this.opts.logger.warn(
        { dir: d },
        'made a directory above the worker directory or the runtime code searchable by others (o+x), so ' +
          'that task processes running as an unprivileged user reach their sandbox and their code',
      );
    }
  }

  /** The account a job's tasks run as (undefined: the worker's own). */
  private accountFor(owner: string | undefined): Promise<TaskAccount | undefined> {
    if (!this.switchesUser) return Promise.resolve(undefined);
    const key = owner ?? '';
    let p = this.accounts.get(key);
    if (!p) {
      p = (async () => {
        const own = owner === undefined ? undefined : await lookupAccount(owner);
        return own !== undefined && own.uid >= MIN_OWNER_UID ? own : this.defaultAccount;
      })();
      this.accounts.set(key, p);
    }
    return p;
  }

  /** Whether the job has a sandbox here (an attempt of it was launched, and it was not cleaned up). */
  has(jobId: string): boolean {
    return this.byJob.has(jobId);
  }

  /**
   * The job's sandbox, made on its first launch here with `cachedModule` (the worker's copy of its
   * module). With `spare` (a sandbox from `makeSpare` whose process waits for a job), the job adopts
   * it when the spare's process can serve it (not a streaming job, the same account): then the
   * sandbox returned has the spare's `dir`.
   */
  prepare(
    jobId: string,
    owner: string | undefined,
    cachedModule: string,
    streaming?: StreamingSandboxOptions,
    spare?: JobSandbox,
  ): Promise<JobSandbox> {
    if (!isValidShuffleId(jobId)) return Promise.reject(new MinimrError('EBADPATH', `invalid job id ${jobId}`));
    let p = this.byJob.get(jobId);
    if (!p) {
      p = this.make(jobId, owner, cachedModule, streaming, spare);
      this.byJob.set(jobId, p);
      p.then(
        (sandbox) => this.dirs.set(jobId, sandbox.dir),
        () => this.byJob.delete(jobId),
      );
    }
    return p;
  }

  /**
   * A sandbox for a process started before its job is known (see the file's comment): a job's
   * layout without the job, and `shuffle/` for the link to its job's map outputs.
   */
  async makeSpare(): Promise<JobSandbox> {
    const account = this.switchesUser ? this.defaultAccount : undefined;
    const dir = join(this.root, `spare-${++this.sparesMade}`);
    const links = join(dir, 'shuffle');
    await this.makeLayout(dir, links, account);
    // The links are the worker's: the task may follow them, not replace them (as another account).
    if (account) {
      await chown(links, 0, account.gid);
      await chmod(links, 0o750);
    }
    return {
      jobId: '',
      dir,
      workDir: join(dir, 'work'),
      inputDir: join(dir, 'input'),
      modulePath: '',
      shuffleDir: links,
      account,
      childProcesses: false,
      shuffleLinks: links,
    };
  }

  /** A spare sandbox no job adopted (its process is gone). */
  async removeSpare(spare: JobSandbox): Promise<void> {
    if (spare.jobId !== '' || [...this.dirs.values()].includes(spare.dir)) return;
    await rm(spare.dir, { recursive: true, force: true });
  }

  private async make(
    jobId: string,
    owner: string | undefined,
    cachedModule: string,
    streaming: StreamingSandboxOptions | undefined,
    spare: JobSandbox | undefined,
  ): Promise<JobSandbox> {
    const account = await this.accountFor(owner);
    const shuffleDir = join(this.opts.shuffleRoot, jobId);
    if (spare?.shuffleLinks !== undefined && !streaming && spare.account?.uid === account?.uid) {
      await this.makeShuffleDir(shuffleDir, account);
      const modulePath = join(spare.dir, basename(cachedModule));
      await this.linkOrCopy(cachedModule, modulePath);
      await symlink(shuffleDir, join(spare.shuffleLinks, jobId));
      const { dir, workDir, inputDir } = spare;
      return { jobId, dir, workDir, inputDir, modulePath, shuffleDir, account, childProcesses: false };
    }
    const dir = join(this.root, jobId);
    const workDir = join(dir, 'work');
    const inputDir = join(dir, 'input');
    const modulePath = join(dir, basename(cachedModule));
    await this.makeLayout(dir, undefined, account);
    await this.makeShuffleDir(shuffleDir, account);
    await this.linkOrCopy(cachedModule, modulePath);
    if (streaming) await this.shipFiles(workDir, await streaming.files(), account);
    return { jobId, dir, workDir, inputDir, modulePath, shuffleDir, account, childProcesses: streaming !== undefined };
  }

  /** A sandbox's directories and its `minimr` package; `extra`, a directory the account may only read. */
  private async makeLayout(dir: string, extra: string | undefined, account: TaskAccount | undefined): Promise<void> {
    const workDir = join(dir, 'work');
    const inputDir = join(dir, 'input');
    const shim = join(dir, 'node_modules', 'minimr');
    await mkdir(shim, { recursive: true });
    await Promise.all([mkdir(workDir, { recursive: true }), mkdir(inputDir), ...(extra ? [mkdir(extra)] : [])]);
    // The job's `import ... from 'minimr'`: a package of its own that re-exports the running engine's
    // API by URL (a symlink to the engine would let `minimr/../..` reach the directories above it).
    await writeFile(join(shim, 'package.json'), '{"name":"minimr","type":"module","exports":"./index.js"}\n');
    await writeFile(
      join(shim, 'index.js'),
      `export * from ${JSON.stringify(pathToFileURL(join(RUNTIME_ROOT, 'index.js')).href)};\n`,
    );
    if (account) {
      // The job's account writes `work` (and its map outputs); the rest of its sandbox it may only read.
      await chown(dir, 0, account.gid);
      await chmod(dir, 0o750);
      await chown(inputDir, 0, account.gid);
      await chmod(inputDir, 0o750);
      await chown(workDir, account.uid, account.gid);
      await chmod(workDir, 0o700);
    }
  }

  /** The job's map output directory, which its account writes. */
  private async makeShuffleDir(shuffleDir: string, account: TaskAccount | undefined): Promise<void> {
    await mkdir(shuffleDir, { recursive: true });
    if (account) {
      await chown(shuffleDir, account.uid, account.gid);
      await chmod(shuffleDir, 0o700);
    }
  }

  /**
   * A streaming job's files in its tasks' working directory, as Hadoop's `-file` puts them: the job's
   * account owns them (its `work` is 0700 to others), executable ones stay executable.
   */
  private async shipFiles(
    workDir: string,
    files: readonly { name: string; data: Uint8Array; executable: boolean }[],
    account: TaskAccount | undefined,
  ): Promise<void> {
    for (const file of files) {
      // The name was checked at submission; a name with a directory in it is still never followed.
      if (basename(file.name) !== file.name || file.name === '.' || file.name === '..')
        throw new MinimrError('EBADPATH', `streaming file name ${JSON.stringify(file.name)} is not a file name`);
      const path = join(workDir, file.name);
      await writeFile(path, file.data, { mode: file.executable ? 0o700 : 0o600 });
      if (account) await chown(path, account.uid, account.gid);
    }
  }

  /** A hard link of `from` at `to` (a copy across file systems), readable by the task account. */
  private async linkOrCopy(from: string, to: string): Promise<void> {
    try {
      await link(from, to);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return;
      if (code !== 'EXDEV') throw err;
      await copyFile(from, to);
    }
    if (this.switchesUser) {
      const mode = (await lstat(to)).mode & 0o7777;
      // Owned by the worker: the task account reads it as "other". The original is in a 0700 directory.
      if ((mode & 0o004) === 0) await chmod(to, mode | 0o044);
    }
  }

  /** Where the task's native addons may be loaded from: the runtime's node_modules directories, as they resolve. */
  addonRoots(): string[] {
    return [...new Set(this.codeDirs.filter((d) => d.endsWith(`${sep}node_modules`)).map((d) => realpathSync(d)))];
  }

  /**
   * The Node options of a process of the job's sandbox; `storePaths`: what its attempt reads and writes
   * outside the block store itself (a file:// input file, a file:// output's attempt directory), which
   * the JobTracker checked against its --file-root and --file-output-root directories.
   */
  execArgv(
    sandbox: JobSandbox,
    env: NodeJS.ProcessEnv = process.env,
    storePaths: StorePaths = { read: [], write: [] },
  ): string[] {
    const read = [sandbox.dir, sandbox.shuffleDir, ...this.codeDirs, '/proc/self/status', ...storePaths.read];
    const write = [sandbox.workDir, sandbox.shuffleDir, '/proc/self/clear_refs', ...storePaths.write];
    // Measurements on one machine (MINIMR_PHASE_TRACE, set by whoever started the worker): the task appends to it
    // (as another user: the file may have been made since init()).
    const trace = env.MINIMR_PHASE_TRACE;
    if (trace) {
      write.push(trace);
      if (sandbox.account) {
        try {
          appendFileSync(trace, '');
          chmodSync(trace, 0o666);
        } catch {
          // its steps go untraced; the attempt runs all the same
        }
      }
    }
    return [
      '--experimental-permission',
      '--disable-warning=ExperimentalWarning',
      // It warns that --allow-addons could invalidate the model: task-process.ts guards process.dlopen.
      '--disable-warning=SecurityWarning',
      ...read.map((p) => `--allow-fs-read=${p}`),
      ...write.map((p) => `--allow-fs-write=${p}`),
      // The LZ4 codec's and msgpackr's addons only (task-process.ts guardAddons).
      '--allow-addons',
      // A streaming job's commands (docs/security.md): the worker runs its own streaming module there.
      ...(sandbox.childProcesses ? ['--allow-child-process'] : []),
    ];
  }

  /** Links the local replica's files of `blockId` into the attempt's input directory; returns that directory. */
  async linkBlock(sandbox: JobSandbox, attemptId: string, files: readonly string[]): Promise<string> {
    if (!isValidShuffleId(attemptId)) throw new MinimrError('EBADPATH', `invalid attempt id ${attemptId}`);
    const dir = join(sandbox.inputDir, attemptId);
    await mkdir(dir, { recursive: true });
    if (sandbox.account) await chmod(dir, 0o755);
    for (const file of files) await this.linkOrCopy(file, join(dir, basename(file)));
    return dir;
  }

  /** Drops the links an attempt read through. */
  async endAttempt(jobId: string, attemptId: string): Promise<void> {
    if (!isValidShuffleId(jobId) || !isValidShuffleId(attemptId)) return;
    await rm(join(this.dirOf(jobId), 'input', attemptId), { recursive: true, force: true });
  }

  /** At a job's clean-up: its sandbox goes (its processes are gone first). */
  async remove(jobId: string): Promise<void> {
    if (!isValidShuffleId(jobId)) return;
    // One still being made goes once made (an adopted spare's directory is known only then).
    const made = await this.byJob.get(jobId)?.catch(() => undefined);
    const dir = made?.dir ?? this.dirOf(jobId);
    this.byJob.delete(jobId);
    this.dirs.delete(jobId);
    await rm(dir, { recursive: true, force: true });
  }

  /** The job's sandbox directory (an adopted spare's, or its own). */
  private dirOf(jobId: string): string {
    return this.dirs.get(jobId) ?? join(this.root, jobId);
  }
}

/**
 * The environment of a task process: the worker's, without its own settings (MINIMR_*: a join
 * token, a secret or credential file), but those a task reads itself.
 */
export function sandboxedEnv(env: NodeJS.ProcessEnv, sandbox: JobSandbox): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith('MINIMR_') && !TASK_SETTINGS.has(name)) continue;
    out[name] = value;
  }
  out.TMPDIR = sandbox.workDir;
  if (sandbox.account) {
    out.HOME = sandbox.workDir;
    out.USER = out.LOGNAME = sandbox.account.name;
    // A streaming job's commands are looked up in PATH: not in directories the task account cannot
    // enter (root's own, a pyenv under /root), where the shell says "Permission denied", not "not found".
    if (out.PATH !== undefined) out.PATH = searchablePath(out.PATH);
  }
  return out;
}

/** The directories of a PATH that any account may search (every directory down to them o+x). */
function searchablePath(path: string): string {
  const searchable = (dir: string): boolean => {
    if (!dir.startsWith(sep)) return false;
    for (let d = dir; ; d = dirname(d)) {
      try {
        if ((statSync(d).mode & 0o001) === 0) return false;
      } catch {
        return false;
      }
      if (d === dirname(d)) return true;
    }
  };
  return path
    .split(':')
    .filter((dir) => dir !== '' && searchable(dir))
    .join(':');
}

/** MINIMR_* variables a task process reads (no secrets among them). */
const TASK_SETTINGS = new Set(['MINIMR_PHASE_TRACE', 'MINIMR_LOG_LEVEL', 'MINIMR_TASK_BUNDLE']);

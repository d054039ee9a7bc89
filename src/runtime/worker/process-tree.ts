/**
 * The memory of a streaming task's commands (issue 35): a streaming job's task process starts its
 * mapper or reducer as child processes, whose memory is the attempt's as much as the task's own, as
 * a YARN container's process tree is. The worker (which may read every process's /proc, the task may
 * not) samples the tree below the task process: the attempt's PEAK_RSS_BYTES includes the commands'
 * peak, and an attempt whose commands hold more than its grant is failed, as YARN's ContainersMonitor
 * kills a container "running beyond physical memory limits". The task process itself is not policed
 * (no job's is: its buffers are sized from the grant); a streaming task's own use is its sort buffer
 * and little else, so the commands are given the grant.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const PAGE_BYTES = 4096;

/** Resident bytes of process `pid` (0 when it is gone or unreadable). */
export function processRssBytes(pid: number): number {
  try {
    const statm = readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ');
    return Number(statm[1]) * PAGE_BYTES;
  } catch {
    return 0;
  }
}

/**
 * The direct children of `pid` from its threads' `children` files (Linux with CONFIG_PROC_CHILDREN:
 * a few reads, not one per process of the host); undefined where the kernel has no such files.
 */
function childrenOf(pid: number): number[] | undefined {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const tid of threads) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && existsSync(`/proc/${pid}/task/${tid}`)) return undefined;
      continue;
    }
    for (const child of text.split(' ')) if (child.trim() !== '') out.push(Number(child));
  }
  return out;
}

/** Every process's children, from every process's parent in /proc (where there are no `children` files). */
function childrenByScan(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return children;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid);
    if (list) list.push(Number(entry));
    else children.set(ppid, [Number(entry)]);
  }
  return children;
}

/** The processes below `rootPid` (children, their children...). */
export function descendantPids(rootPid: number): number[] {
  let scan: Map<number, number[]> | undefined;
  const of = (pid: number): number[] => {
    if (!scan) {
      const direct = childrenOf(pid);
      if (direct !== undefined) return direct;
      scan = childrenByScan();
    }
    return scan.get(pid) ?? [];
  };
  const out: number[] = [];
  const stack = [...of(rootPid)];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...of(pid));
  }
  return out;
}

/** Resident bytes of the processes below `rootPid`, summed. */
export function descendantsRssBytes(rootPid: number): number {
  let bytes = 0;
  for (const pid of descendantPids(rootPid)) bytes += processRssBytes(pid);
  return bytes;
}

/** How often a streaming attempt's process tree is measured. */
export const COMMAND_MEMORY_SAMPLE_MS = 250;

/**
 * Samples the commands below a task process until stopped: their peak, and `onOverBudget` once they
 * hold more than `budgetBytes`.
 */
export class CommandMemoryWatch {
  peakBytes = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly taskPid: number,
    private readonly budgetBytes: number,
    private readonly onOverBudget: (taskBytes: number, commandBytes: number) => void,
  ) {
    this.timer = setInterval(() => this.sample(), COMMAND_MEMORY_SAMPLE_MS);
    this.timer.unref();
  }

  /** The commands last seen below the task process (kept for `killCommands`: an orphan is reparented). */
  private lastPids: number[] = [];

  sample(): void {
    const pids = descendantPids(this.taskPid);
    if (pids.length > 0) this.lastPids = pids;
    let commandBytes = 0;
    for (const pid of pids) commandBytes += processRssBytes(pid);
    if (commandBytes > this.peakBytes) this.peakBytes = commandBytes;
    if (commandBytes > this.budgetBytes) {
      this.stop();
      this.onOverBudget(processRssBytes(this.taskPid), commandBytes);
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Kills the commands below the task process, as last seen (its attempt has ended). */
  killCommands(): void {
    for (const pid of [...descendantPids(this.taskPid), ...this.lastPids]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
}

/**
 * Kills a task process with SIGKILL, and first, when it may have started commands (a streaming
 * attempt's, in process groups of their own), the processes below it: killed, it cannot take them
 * with it, and once it is gone they are no longer its descendants.
 */
export function killTaskProcess(child: ChildProcess, withCommands: boolean): void {
  if (withCommands && child.pid !== undefined) killDescendants(child.pid);
  child.kill('SIGKILL');
}

/** Kills the processes below `rootPid`, read from /proc. */
function killDescendants(rootPid: number): void {
  for (const pid of descendantPids(rootPid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

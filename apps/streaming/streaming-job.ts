/**
 * The built-in streaming job (Hadoop Streaming's contract): any executable as mapper, combiner and
 * reducer, run with `/bin/sh -c COMMAND` in the task's working directory (where `--file`s are).
 *
 * - Mapper: the split's lines on its stdin, each ended by `\n` (a CRLF line without its `\r`, as
 *   `map` gets it); every line of its stdout is a record `key<TAB>value`, cut at the first tab (a
 *   line without a tab is a key with an empty value). Only `\n` ends an output line: keys and values
 *   are bytes, passed on as written (any `\r` included), never decoded.
 * - Reducer: one process per reduce task, its partition on stdin as `key<TAB>value` lines sorted by
 *   the key's bytes (Hadoop's Text order), a key's values together; its stdout lines are the output
 *   records, written `key<TAB>value` (a key with an empty value is written `key<TAB>`, as Hadoop's
 *   TextOutputFormat writes a Text ""). No reducer: the map output as sorted (IdentityReducer).
 * - Combiner: like a reducer, on the map's output a batch at a time (each batch sorted), before the
 *   shuffle; it may run on any part of the map output, as Hadoop's combiner.
 * - A command that exits non-zero (or by a signal) fails the attempt with the last lines of its
 *   stderr; one silent for `taskTimeoutMs` (reading no input, writing no output, no stderr) is
 *   killed with its process group and fails the attempt (Hadoop's mapreduce.task.timeout, 600 s).
 *   stderr also goes to the attempt's log; `reporter:counter:GROUP,NAME,N` lines add to counters.
 * - Environment: PATH, HOME (the working directory), TMPDIR, LANG/LC_* and USER/LOGNAME of the task,
 *   Hadoop's task variables (mapreduce_task_attempt_id, map_input_file, ...) and `--cmdenv`s.
 *
 * Parameters (`minimr streaming` sets them): mapper, reducer, combiner (commands), cmdenv (object of
 * strings), taskTimeoutMs. Imports only 'minimr' and node: built-ins, as any job module.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { codecs, defineJob, MinimrError, textInput, textOutput, type JsonValue, type TaskContext } from 'minimr';

const TAB = 0x09;
const NEWLINE = 0x0a;
const CR = 0x0d;
/** Hadoop's mapreduce.task.timeout default. */
const DEFAULT_TASK_TIMEOUT_MS = 600_000;
/** The stderr a failure message quotes: its last lines, at most this many bytes of them. */
const STDERR_TAIL_BYTES = 2048;
const STDERR_TAIL_LINES = 10;
/** Map output batched for one combiner run: at most these bytes, and these distinct keys. */
const COMBINE_BATCH_BYTES = 16 * 1024 * 1024;
const COMBINE_BATCH_KEYS = 100_000;
/** Reduce input lines gathered before a write to the reducer. */
const WRITE_BATCH_BYTES = 64 * 1024;

type Role = 'mapper' | 'combiner' | 'reducer';

function commandParam(params: Readonly<Record<string, JsonValue>>, role: Role): string | undefined {
  const v = params[role];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new MinimrError('EBADJOB', `streaming: the ${role} must be a command string`);
  return v;
}

/** The command's environment: a small one, never the task's MINIMR_* settings. */
function commandEnv(ctx: TaskContext, extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: process.cwd(),
    TMPDIR: process.env.TMPDIR ?? process.cwd(),
    mapreduce_job_id: ctx.jobId,
    mapreduce_task_id: ctx.taskId,
    mapreduce_task_attempt_id: ctx.attemptId,
    ...extra,
  };
  for (const name of ['LANG', 'LC_ALL', 'LC_CTYPE', 'USER', 'LOGNAME']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  const cmdenv = ctx.params.cmdenv;
  if (cmdenv !== undefined && cmdenv !== null) {
    if (typeof cmdenv !== 'object' || Array.isArray(cmdenv))
      throw new MinimrError('EBADJOB', 'streaming: cmdenv must be an object of strings');
    for (const [name, value] of Object.entries(cmdenv)) {
      if (name.startsWith('MINIMR_')) continue;
      env[name] = String(value);
    }
  }
  return env;
}

/**
 * Splits a byte stream into `\n`-ended lines (the last one may lack it) and hands each to `onLine` with
 * its first tab (`end` when it has none). One pass in JavaScript over the bytes: records are mostly a
 * few bytes long, for which a native `indexOf` call per line and per tab cost more than the scan.
 */
class LineSplitter {
  private pending: Buffer | undefined;

  constructor(private readonly onLine: (bytes: Buffer, start: number, tab: number, end: number) => void) {}

  push(data: Buffer): void {
    let buf = data;
    if (this.pending) {
      buf = Buffer.concat([this.pending, data]);
      this.pending = undefined;
    }
    const n = buf.length;
    let start = 0;
    let tab = -1;
    for (let i = 0; i < n; i++) {
      const c = buf[i]!;
      if (c === NEWLINE) {
        this.onLine(buf, start, tab < 0 ? i : tab, i);
        start = i + 1;
        tab = -1;
      } else if (c === TAB && tab < 0) tab = i;
    }
    if (start < n) this.pending = buf.subarray(start);
  }

  end(): void {
    const last = this.pending;
    this.pending = undefined;
    if (!last) return;
    const tab = last.indexOf(TAB);
    this.onLine(last, 0, tab < 0 ? last.length : tab, last.length);
  }
}

/** The last lines of what a command wrote to stderr, bounded, for a failure message. */
class StderrTail {
  private tail = Buffer.alloc(0);

  push(data: Buffer): void {
    this.tail = Buffer.concat([this.tail, data]);
    if (this.tail.length > STDERR_TAIL_BYTES * 2) this.tail = this.tail.subarray(this.tail.length - STDERR_TAIL_BYTES);
  }

  text(): string {
    const lines = this.tail.toString('utf8').split('\n');
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    let out = lines.slice(-STDERR_TAIL_LINES).join('\n');
    if (out.length > STDERR_TAIL_BYTES) out = `...${out.slice(out.length - STDERR_TAIL_BYTES)}`;
    return out;
  }
}

/**
 * One command: `/bin/sh -c command` in its own process group, its stdin written with backpressure,
 * its stdout cut into records, its stderr passed to the attempt's log; watched for silence.
 */
class StreamCommand {
  private readonly child: ChildProcess;
  private readonly stderrTail = new StderrTail();
  private readonly stdoutLines: LineSplitter;
  private lastActivity = Date.now();
  private stdinOpen = true;
  private failure: Error | undefined;
  private readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly watchdog: NodeJS.Timeout;
  private drainWaiters: Array<() => void> = [];

  constructor(
    private readonly role: Role,
    private readonly command: string,
    env: Record<string, string>,
    private readonly timeoutMs: number,
    onRecord: (bytes: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) => void,
    private readonly ctx: TaskContext,
  ) {
    // A line without a tab is a key with an empty value.
    this.stdoutLines = new LineSplitter((bytes, start, tab, end) =>
      onRecord(bytes, start, tab, Math.min(tab + 1, end), end),
    );
    this.child = spawn('/bin/sh', ['-c', command], {
      cwd: process.cwd(),
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      // Its own process group: a timeout or a failure kills the command and whatever it started.
      detached: true,
    });
    const stderrLines = new LineSplitter((bytes, start, _tab, end) => this.reporterLine(bytes.subarray(start, end)));
    this.closed = new Promise((resolve, reject) => {
      this.child.once('error', (err) => {
        this.failure ??= new MinimrError('ETASK', `streaming ${role} \`${command}\` could not start: ${err.message}`);
        reject(this.failure);
      });
      this.child.once('close', (code, signal) => resolve({ code, signal }));
    });
    this.closed.catch(() => undefined);
    this.child.stdout!.on('data', (data: Buffer) => {
      this.lastActivity = Date.now();
      try {
        this.stdoutLines.push(data);
      } catch (err) {
        this.fail(err as Error);
      }
    });
    this.child.stderr!.on('data', (data: Buffer) => {
      this.lastActivity = Date.now();
      this.stderrTail.push(data);
      process.stderr.write(data);
      stderrLines.push(data);
    });
    this.child.stdin!.on('error', () => this.stdinGone());
    this.child.stdin!.on('close', () => this.stdinGone());
    this.child.stdin!.on('drain', () => this.wakeWriters());
    this.watchdog = setInterval(() => this.watch(), Math.max(10, Math.min(1000, Math.floor(timeoutMs / 4))));
  }

  /** Hadoop's stderr protocol: `reporter:counter:GROUP,NAME,AMOUNT` (statuses only count as activity). */
  private reporterLine(line: Buffer): void {
    if (line[0] !== 0x72 /* r */ || !line.subarray(0, 17).toString('latin1').startsWith('reporter:counter:')) return;
    const [group, name, amount] = line.subarray(17).toString('utf8').trim().split(',');
    const n = Number(amount);
    if (group && name && Number.isFinite(n)) this.ctx.count(`${group}.${name}`, n);
  }

  private watch(): void {
    const silentMs = Date.now() - this.lastActivity;
    if (silentMs <= this.timeoutMs) return;
    this.fail(
      new MinimrError(
        'ETIMEOUT',
        `streaming ${this.role} \`${this.command}\` read no input and wrote no output or stderr for ` +
          `${silentMs} ms (taskTimeoutMs ${this.timeoutMs}, Hadoop's mapreduce.task.timeout): killed`,
      ),
    );
  }

  /** Ends the command at once (its whole process group) with `err` as the attempt's failure. */
  fail(err: Error): void {
    this.failure ??= err;
    this.kill();
    this.wakeWriters();
  }

  kill(): void {
    clearInterval(this.watchdog);
    if (this.child.pid !== undefined && this.child.exitCode === null && this.child.signalCode === null) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        this.child.kill('SIGKILL');
      }
    }
  }

  private stdinGone(): void {
    this.stdinOpen = false;
    this.wakeWriters();
  }

  private wakeWriters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  /** Writes to the command's stdin; resolves once it may take more. Input it stopped reading is dropped. */
  async write(bytes: Buffer): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.stdinOpen || bytes.length === 0) return;
    const more = this.child.stdin!.write(bytes, () => {
      this.lastActivity = Date.now();
    });
    if (!more) await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
    if (this.failure) throw this.failure;
  }

  /** Closes its stdin and waits for it to exit: a non-zero status or a signal is the attempt's failure. */
  async finish(): Promise<void> {
    if (this.stdinOpen) this.child.stdin!.end();
    let exit: { code: number | null; signal: NodeJS.Signals | null };
    try {
      exit = await this.closed;
    } finally {
      clearInterval(this.watchdog);
    }
    if (this.failure) throw this.failure;
    this.stdoutLines.end();
    if (exit.code === 0) return;
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with status ${exit.code}`;
    const tail = this.stderrTail.text();
    throw new MinimrError(
      'ETASK',
      `streaming ${this.role} \`${this.command}\` ${how}${tail ? `; its stderr ends:\n${tail}` : ' (no stderr)'}`,
    );
  }
}

function timeoutOf(ctx: TaskContext): number {
  const t = ctx.params.taskTimeoutMs;
  return typeof t === 'number' && Number.isFinite(t) && t > 0 ? t : DEFAULT_TASK_TIMEOUT_MS;
}

/** Runs `command` under `role` over what `feed` writes, handing its records to `onRecord`; kills it on any failure. */
async function runCommand(
  role: Role,
  command: string,
  env: Record<string, string>,
  ctx: TaskContext,
  onRecord: (bytes: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) => void,
  feed: (cmd: StreamCommand) => Promise<void>,
): Promise<void> {
  const cmd = new StreamCommand(role, command, env, timeoutOf(ctx), onRecord, ctx);
  try {
    await feed(cmd);
    await cmd.finish();
  } catch (err) {
    cmd.fail(err as Error);
    throw err;
  }
}

/** A chunk of whole input lines as a streaming command reads them: CRLF endings as LF, the last line ended. */
function streamingLines(bytes: Buffer): Buffer {
  const endsLine = bytes.length > 0 && bytes[bytes.length - 1] === NEWLINE;
  if (bytes.indexOf(CR) < 0) return endsLine ? bytes : Buffer.concat([bytes, Buffer.from('\n')]);
  const out = Buffer.allocUnsafe(bytes.length + 1);
  let n = 0;
  let start = 0;
  while (start < bytes.length) {
    let nl = bytes.indexOf(NEWLINE, start);
    if (nl < 0) nl = bytes.length;
    let end = nl;
    if (end > start && bytes[end - 1] === CR) end--;
    n += bytes.copy(out, n, start, end);
    out[n++] = NEWLINE;
    start = nl + 1;
  }
  return out.subarray(0, n);
}

/** Lines `key<TAB>value\n` of sorted records, copied into pieces of about WRITE_BATCH_BYTES and written. */
class RecordWriter {
  private out = Buffer.allocUnsafe(WRITE_BATCH_BYTES);
  private used = 0;

  constructor(private readonly cmd: StreamCommand) {}

  async add(key: Buffer, value: Buffer): Promise<void> {
    const need = key.length + value.length + 2;
    if (this.used + need > this.out.length) {
      await this.flush();
      if (need > this.out.length) this.out = Buffer.allocUnsafe(need);
    }
    const o = this.out;
    this.used += key.copy(o, this.used);
    o[this.used++] = TAB;
    this.used += value.copy(o, this.used);
    o[this.used++] = NEWLINE;
  }

  async flush(): Promise<void> {
    if (this.used === 0) return;
    // The command's stdin keeps what it is given until written: a fresh piece for the next lines.
    const data = this.out.subarray(0, this.used);
    this.out = Buffer.allocUnsafe(WRITE_BATCH_BYTES);
    this.used = 0;
    await this.cmd.write(data);
  }
}

/**
 * Map output held for one combiner run: the records' lines `key<TAB>value\n` one after another in one
 * buffer, and each key's records in arrival order. Sorting the distinct keys (as latin1 strings, whose
 * order is the bytes' order) rather than every record: a combiner earns its keep on few distinct keys
 * (WordCount spent 20 s of CPU per 64 MB comparing records with a record-by-record sort).
 */
class CombineBatch {
  bytes = Buffer.allocUnsafe(1 << 16);
  used = 0;
  records = 0;
  /** Line starts, each key's in arrival order; a line ends where the next one in `bytes` starts. */
  private readonly byKey = new Map<string, number[]>();
  private readonly ends: number[] = [];

  /** Whether it is full: its bytes, or its distinct keys (their arrays and strings cost memory too). */
  get full(): boolean {
    return this.used >= COMBINE_BATCH_BYTES || this.byKey.size >= COMBINE_BATCH_KEYS;
  }

  add(src: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): void {
    const need = keyEnd - keyStart + valueEnd - valueStart + 2;
    if (this.used + need > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.used + need));
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    const key = src.toString('latin1', keyStart, keyEnd);
    const b = this.bytes;
    const start = this.used;
    if (valueStart === keyEnd + 1) {
      // `key<TAB>value` as it came: one copy.
      this.used += src.copy(b, this.used, keyStart, valueEnd);
    } else {
      this.used += src.copy(b, this.used, keyStart, keyEnd);
      b[this.used++] = TAB;
    }
    b[this.used++] = NEWLINE;
    const index = this.records++;
    this.ends[index] = this.used;
    const list = this.byKey.get(key);
    // A key's record: its index and start, side by side.
    if (list) list.push(index, start);
    else this.byKey.set(key, [index, start]);
  }

  /** The lines in key order (bytewise; a key's in arrival order), in pieces of about WRITE_BATCH_BYTES. */
  *sortedLines(): Generator<Buffer> {
    const { bytes, ends } = this;
    let out = Buffer.allocUnsafe(WRITE_BATCH_BYTES);
    let n = 0;
    for (const key of [...this.byKey.keys()].sort()) {
      const list = this.byKey.get(key)!;
      for (let i = 0; i < list.length; i += 2) {
        const start = list[i + 1]!;
        const end = ends[list[i]!]!;
        if (n + end - start > out.length) {
          if (n > 0) yield out.subarray(0, n);
          out = Buffer.allocUnsafe(Math.max(WRITE_BATCH_BYTES, end - start));
          n = 0;
        }
        n += bytes.copy(out, n, start, end);
      }
    }
    if (n > 0) yield out.subarray(0, n);
  }
}

export default defineJob({
  name: 'streaming',
  input: textInput(),
  output: textOutput(),
  mapKey: codecs.bytes,
  mapValue: codecs.bytes,
  async mapSplit(input, ctx) {
    const mapper = commandParam(ctx.params, 'mapper');
    if (!mapper) throw new MinimrError('EBADJOB', 'streaming: a mapper command is required');
    const combiner = commandParam(ctx.params, 'combiner');
    const env = commandEnv(ctx, {
      mapreduce_task_partition: String(ctx.mapIndex),
      ...(ctx.split
        ? {
            map_input_file: ctx.split.path,
            mapreduce_map_input_file: ctx.split.path,
            mapreduce_map_input_start: String(ctx.split.start),
            mapreduce_map_input_length: String(ctx.split.length),
          }
        : {}),
    });
    // Without a combiner each record goes to the shuffle (or the part file) as it comes; with one, into
    // a batch that is combined when full (between input chunks, while the mapper waits) and at the end.
    let batch = new CombineBatch();
    const full: CombineBatch[] = [];
    const onRecord = combiner
      ? (bytes: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) => {
          batch.add(bytes, keyStart, keyEnd, valueStart, valueEnd);
          if (batch.full) {
            full.push(batch);
            batch = new CombineBatch();
          }
        }
      : (bytes: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) =>
          ctx.emitKeyBytes(bytes, keyStart, keyEnd, bytes.subarray(valueStart, valueEnd));
    const combine = async (b: CombineBatch) => {
      ctx.count('streaming.combineInputRecords', b.records);
      await runCommand(
        'combiner',
        combiner!,
        env,
        ctx,
        (bytes, keyStart, keyEnd, valueStart, valueEnd) => {
          ctx.count('streaming.combineOutputRecords');
          ctx.emitKeyBytes(bytes, keyStart, keyEnd, bytes.subarray(valueStart, valueEnd));
        },
        async (cmd) => {
          for (const lines of b.sortedLines()) await cmd.write(lines);
        },
      );
    };
    await runCommand('mapper', mapper, env, ctx, onRecord, async (cmd) => {
      for await (const chunk of input.chunks()) {
        await cmd.write(streamingLines(chunk.bytes));
        for (let b = full.shift(); b; b = full.shift()) await combine(b);
      }
    });
    for (let b = full.shift(); b; b = full.shift()) await combine(b);
    if (combiner && batch.records > 0) await combine(batch);
  },
  async reducePartition(groups, ctx) {
    const reducer = commandParam(ctx.params, 'reducer');
    if (!reducer) {
      for await (const group of groups) for (const value of group.values) ctx.emit(group.key, value);
      return;
    }
    const env = commandEnv(ctx, { mapreduce_task_partition: String(ctx.reduceIndex) });
    await runCommand(
      'reducer',
      reducer,
      env,
      ctx,
      (bytes, keyStart, keyEnd, valueStart, valueEnd) =>
        ctx.emit(Buffer.from(bytes.subarray(keyStart, keyEnd)), Buffer.from(bytes.subarray(valueStart, valueEnd))),
      async (cmd) => {
        const writer = new RecordWriter(cmd);
        for await (const group of groups) for (const value of group.values) await writer.add(group.key, value);
        await writer.flush();
      },
    );
  },
});

/**
 * A user's exception, shown at the user's own files and lines. A job runs as a bundle
 * (job-bundle.ts) whose inline source map names its sources relative to the job file's directory;
 * here the frames of a thrown error that lie in the bundle are mapped back through it
 * (`at map (lib/words.js:12:5)`), and the engine's own frames and Node's are dropped: the stack a
 * user reads is theirs alone.
 *
 * Mapped only when an error is reported, from the bundle's text: nothing is done at task start
 * (Node's own source-map support would parse every map as its module loads, in each attempt's fresh
 * instance, and would reach the engine's files too).
 */
import { readFileSync, realpathSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The most frames of a user's stack kept, and its most characters: it travels in an error's details. */
const MAX_USER_FRAMES = 12;
export const MAX_USER_STACK_CHARS = 4096;

/** A user's exception: its stack at their own frames, and where it was thrown (`file:line:col`). */
export interface UserStack {
  /** The error's first line, then its user frames, `    at fn (file:line:col)` each. */
  readonly stack: string;
  /** The top user frame's `file:line:col`. */
  readonly at: string;
}

/**
 * The esbuild namespace of the modules that stand in a bundle for a native package another package
 * requires (job-bundle.ts): their frames (`minimr-unbundlable:pkg`) are not the user's code.
 */
export const UNBUNDLABLE = 'minimr-unbundlable';

const INLINE_MAP = /\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/;
/** `    at name (file:line:col)` or `    at file:line:col`, `async ` or `new ` prefixed. */
const FRAME = /^\s*at (?:(.+?) \()?(.+?):(\d+):(\d+)\)?$/;

const maps = new Map<string, SourceMap | undefined>();

function sourceMapOf(bundleFile: string, source?: string): SourceMap | undefined {
  if (maps.has(bundleFile)) return maps.get(bundleFile);
  let map: SourceMap | undefined;
  try {
    const text = source ?? readFileSync(bundleFile, 'utf8');
    const m = INLINE_MAP.exec(text);
    if (m) map = new SourceMap(JSON.parse(Buffer.from(m[1]!, 'base64').toString('utf8')) as SourceMapPayload);
  } catch {
    // no usable map: frames stay unmapped (and are dropped)
  }
  // One bundle per task process (it runs one job module); a client keeps the few it submitted.
  if (maps.size > 16) maps.clear();
  maps.set(bundleFile, map);
  return map;
}

/** The file a frame names, as a path (ES modules' frames name URLs, with the attempt's `?instance=`). */
function framePath(file: string): string {
  if (!file.startsWith('file://')) return file;
  try {
    const url = new URL(file);
    url.search = '';
    return fileURLToPath(url);
  } catch {
    return file;
  }
}

/**
 * The user's part of `err`'s stack: its frames in the bundle stored at `bundleFile` (the job
 * module's text is read from there, or given as `source`), mapped to the user's files; undefined
 * when none of its frames is the user's (a value thrown that is not an Error, or an engine error).
 */
export function userStackOf(err: unknown, bundleFile: string, source?: string): UserStack | undefined {
  const stack = (err as Error | undefined)?.stack;
  if (typeof stack !== 'string') return undefined;
  const lines = stack.split('\n');
  const firstFrame = lines.findIndex((l) => FRAME.test(l));
  if (firstFrame < 0) return undefined;
  // Node's loader names a module by its real path.
  const names = new Set([bundleFile]);
  try {
    names.add(realpathSync(bundleFile));
  } catch {
    // gone (a client's temporary copy): its frames name it as it was given
  }
  const frames: string[] = [];
  let at: string | undefined;
  for (const line of lines.slice(firstFrame)) {
    const m = FRAME.exec(line);
    if (!m || !names.has(framePath(m[2]!))) continue;
    const map = sourceMapOf(bundleFile, source);
    const entry = map?.findEntry(Number(m[3]) - 1, Number(m[4]) - 1);
    if (!entry || !('originalSource' in entry) || entry.originalSource === undefined) continue;
    if (entry.originalSource.startsWith(`${UNBUNDLABLE}:`)) continue;
    const where = `${entry.originalSource}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
    at ??= where;
    const name = m[1];
    frames.push(name ? `    at ${name} (${where})` : `    at ${where}`);
    if (frames.length >= MAX_USER_FRAMES) break;
  }
  if (at === undefined) return undefined;
  const head = lines.slice(0, firstFrame).join('\n');
  const text = [head.length > 1000 ? `${head.slice(0, 1000)}...` : head, ...frames].join('\n');
  return { stack: text.length > MAX_USER_STACK_CHARS ? text.slice(0, MAX_USER_STACK_CHARS) : text, at };
}

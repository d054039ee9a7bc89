/**
 * How the `minimr` command fails, the way a Unix tool does: one line `minimr: CODE: message` on
 * stderr and a non-zero exit, never a Node stack (MINIMR_DEBUG=1 adds the stack of an error that is
 * not minimr's own, for a bug report); a reader that closes the pipe (`minimr fs cat /x | head`)
 * ends the command quietly with status 0, as `cat` does; a usage error says what was wrong and
 * the nearest command or flag ("did you mean"), not the whole help.
 */
import { MinimrError } from '../errors.js';
import { escapeControlCharacters } from '../util/index.js';

/** Exit status of a usage error (yargs' and the shells' convention). */
export const USAGE_EXIT_CODE = 2;

/** The operating system's error codes a command may meet and say as they are (not a bug of ours). */
const OS_ERROR_CODES = new Set([
  'ENOENT',
  'EACCES',
  'EPERM',
  'EEXIST',
  'EISDIR',
  'ENOTDIR',
  'ENOTEMPTY',
  'ENOSPC',
  'EDQUOT',
  'EROFS',
  'EMFILE',
  'EADDRINUSE',
  'EADDRNOTAVAIL',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);

function isClosedPipe(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' || code === 'ERR_STREAM_PREMATURE_CLOSE';
}

/** The one line a failure prints (without `minimr: `), or undefined for a closed pipe (no line, status 0). */
export function failureLine(err: unknown): string | undefined {
  if (isClosedPipe(err)) return undefined;
  if (err instanceof MinimrError || (err as MinimrError | undefined)?.name === 'MinimrError') {
    const e = err as MinimrError;
    return `${e.code}: ${escapeControlCharacters(e.message)}`;
  }
  const e = err as NodeJS.ErrnoException | undefined;
  if (typeof e?.code === 'string' && OS_ERROR_CODES.has(e.code)) {
    // Node's message starts with the code ("ENOENT: no such file or directory, open 'x'").
    const message = (e.message ?? '').replace(new RegExp(`^${e.code}: `), '');
    return `${e.code}: ${escapeControlCharacters(message)}`;
  }
  const message = e instanceof Error ? e.message : String(err);
  return (
    `EINTERNAL: ${escapeControlCharacters(message)} (this is a bug in minimr: ` +
    'MINIMR_DEBUG=1 prints where it happened)'
  );
}

/** Prints `err` as one line and exits: 0 for a closed pipe, 2 for a usage error, 1 otherwise. */
export function exitWithFailure(err: unknown): never {
  const line = failureLine(err);
  const exitCode = (err as MinimrError | undefined)?.code === 'EUSAGE' ? USAGE_EXIT_CODE : 1;
  if (line === undefined) process.exit(0);
  try {
    process.stderr.write(`minimr: ${line}\n`);
    if (process.env.MINIMR_DEBUG && err instanceof Error && err.stack && !(err instanceof MinimrError))
      process.stderr.write(`${err.stack}\n`);
  } catch {
    // stderr is closed too: the exit status still says it failed
  }
  process.exit(exitCode);
}

/**
 * A reader that closes stdout or stderr early is not an error of the command: it ends quietly with
 * status 0. Any other failure of the standard streams ends the command with its one line. (An
 * 'error' listener here, once per process, is also why no command needs its own.)
 */
export function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (isClosedPipe(err)) process.exit(0);
      exitWithFailure(err);
    });
  }
}

/** Levenshtein distance, for "did you mean". */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The candidate nearest to `word` if near enough to be its typo (a third of it changed at most, or a prefix). */
export function nearest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = c.startsWith(word) && word.length >= 2 ? 0.5 : editDistance(word, c);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(word.length / 3)) ? best : undefined;
}

/** What a command's help text offers: its subcommands' names and its flags. */
export function helpVocabulary(help: string): { usage: string; commands: string[]; flags: string[] } {
  const lines = help.split('\n');
  // The first line is the command's usage ("minimr job status <id>"): its words before the first argument.
  const usageWords: string[] = [];
  for (const word of (lines[0] ?? '').split(/\s+/).filter((w) => w !== '')) {
    if (!/^[a-z][\w-]*$/.test(word)) break;
    usageWords.push(word);
  }
  const usage = usageWords.join(' ');
  const commands: string[] = [];
  const flags: string[] = [];
  let section = '';
  for (const line of lines) {
    if (/^\S.*:$/.test(line)) section = line;
    else if (section === 'Commands:') {
      const words = line.trim().split(/\s+/);
      // "  minimr fs ls [path]   list a directory": the word after the usage's own words.
      const depth = usage.split(' ').length;
      if (words.slice(0, depth).join(' ') === usage && words[depth]) commands.push(words[depth]);
    }
    for (const m of line.matchAll(/(?:^|[\s,])--([a-z][a-z0-9-]*)/g)) flags.push(m[1]!);
  }
  return { usage: usage || 'minimr', commands: [...new Set(commands)], flags: [...new Set(flags)] };
}

/**
 * The usage error's line, with "did you mean" when an unknown argument is near a command or flag
 * of the command being parsed, and where its help is.
 */
export function usageFailure(message: string, help: string, args: readonly string[]): [line: string, where: string] {
  const { usage, commands, flags } = helpVocabulary(help);
  const unknown = /^Unknown arguments?: (.+)$/.exec(message.trim());
  let text = message.trim().replace(/\n+/g, '; ');
  // yargs reports one failure: a missing required option hides an unknown one that is its typo.
  const unknownFlags = args
    .filter((a) => a.startsWith('--') && a.length > 2)
    .map((a) => a.slice(2).split('=')[0]!)
    .filter((f) => !flags.includes(f) && !(f.startsWith('no-') && flags.includes(f.slice(3))));
  const words = unknown ? unknown[1]!.split(', ') : unknownFlags;
  if (words.length > 0) {
    const hints: string[] = unknown ? [] : [text];
    let commandNamed = false;
    for (const word of words) {
      const asFlag = args.some((a) => a === `--${word}` || a.startsWith(`--${word}=`) || a === `-${word}`);
      const suggestion = asFlag ? nearest(word, flags) : nearest(word, commands);
      if (asFlag)
        hints.push(`unknown option --${word}${suggestion !== undefined ? ` (did you mean --${suggestion}?)` : ''}`);
      else if (!commandNamed) {
        // Words after an unknown command are its arguments, not more mistakes.
        commandNamed = commands.length > 0;
        hints.push(
          `unknown ${commands.length > 0 ? 'command' : 'argument'} '${word}'` +
            (suggestion !== undefined ? ` (did you mean '${suggestion}'?)` : ''),
        );
      }
    }
    text = hints.join('; ');
  }
  return [
    `EUSAGE: ${escapeControlCharacters(text)}`,
    `run '${usage} --help' for its ${commands.length > 0 ? 'commands and ' : ''}options`,
  ];
}

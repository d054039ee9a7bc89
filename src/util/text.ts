/**
 * Names in the block store and job names come from users and may hold any character but NUL; a
 * terminal must not be driven by them (an escape sequence in a file name could rewrite the screen,
 * a newline could forge a line of `fs ls`). Control characters (C0, DEL, C1) and the backslash
 * are printed as escapes, so what is shown names the path unambiguously.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\\]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' };

export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL, (c) => NAMED[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const TERMINAL_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Text written by programs (an attempt's stdout and stderr) for a terminal, as `cat -v` shows it:
 * control characters that could drive the terminal (ESC, CR, BEL, DEL, C1...) as escapes (`\x1b`,
 * `\r`), newlines and tabs kept so the text reads as it was written. Backslashes stay as they are:
 * this is for reading, not for naming.
 */
/**
 * A map output key (or value) as an error message names it: a string quoted, bytes in hex, anything
 * else as String gives it; cut to 80 characters.
 */
export function describeKey(key: unknown): string {
  const text =
    typeof key === 'string' ? JSON.stringify(key) : Buffer.isBuffer(key) ? `0x${key.toString('hex')}` : String(key);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

export function escapeTerminalControls(text: string): string {
  return text.replace(TERMINAL_CONTROL, (c) => NAMED[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

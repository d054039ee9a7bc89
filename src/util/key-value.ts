import { MinimrError } from '../errors.js';

/**
 * `key=value` items of a repeated command-line option (`--param`, `--conf`) as [key, value] pairs,
 * split at the first `=` (a value may hold more); an item without a key is EBADJOB naming the option.
 */
export function keyValuePairs(list: readonly string[] | undefined, option: string): [string, string][] {
  return (list ?? []).map((item) => {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new MinimrError('EBADJOB', `${option} takes key=value, got "${item}"`);
    return [item.slice(0, eq), item.slice(eq + 1)];
  });
}

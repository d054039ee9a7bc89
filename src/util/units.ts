/**
 * Byte sizes written the way people write them ("64k", "1m"): the CLI's flags and the benchmarks'
 * options share one parser, so a size means the same thing everywhere.
 */
import { MinimrError } from '../errors.js';

/** Parses sizes such as 65536, "64k", "64m", "1g" (binary units, as Hadoop's dfs.blocksize). */
export function parseSize(value: string | number): number {
  if (typeof value === 'number') return value;
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i.exec(value.trim());
  if (!m) throw new MinimrError('EBADCONF', `not a size: "${value}" (use e.g. 65536, 64k, 64m, 1g)`, { value });
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[
    m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g' | 't'
  ];
  return Math.round(Number(m[1]) * mult);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

import { MinimrError } from '../errors.js';
import type { PoolView } from './types.js';

/**
 * Pools from configuration (a JSON array, as `--pools` files hold it), checked field by field so a
 * typo fails at start-up with the pool's name rather than as a silently unfair scheduler.
 */
export function parsePools(value: unknown): PoolView[] {
  const bad = (message: string): never => {
    throw new MinimrError('EBADCONF', `pools: ${message}`);
  };
  if (!Array.isArray(value)) bad('expected a JSON array of {name, minMapSlots, minReduceSlots, weight, mode}');
  const names = new Set<string>();
  return (value as unknown[]).map((raw, i) => {
    if (typeof raw !== 'object' || raw === null) return bad(`entry ${i} is not an object`);
    const r = raw as Record<string, unknown>;
    const known = new Set(['name', 'minMapSlots', 'minReduceSlots', 'weight', 'mode']);
    for (const k of Object.keys(r)) if (!known.has(k)) bad(`entry ${i}: unknown field "${k}"`);
    if (typeof r.name !== 'string' || r.name === '') bad(`entry ${i}: name must be a non-empty string`);
    const name = r.name as string;
    if (names.has(name)) bad(`pool "${name}" is listed twice`);
    names.add(name);
    const count = (field: string): number => {
      const v = r[field] ?? 0;
      if (!Number.isInteger(v) || (v as number) < 0) bad(`pool "${name}": ${field} must be a non-negative integer`);
      return v as number;
    };
    const weight = r.weight ?? 1;
    if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0)
      bad(`pool "${name}": weight must be a positive number`);
    const mode = r.mode ?? 'fair';
    if (mode !== 'fair' && mode !== 'fifo') bad(`pool "${name}": mode must be "fair" or "fifo"`);
    return {
      name,
      minMapSlots: count('minMapSlots'),
      minReduceSlots: count('minReduceSlots'),
      weight: weight as number,
      mode: mode as 'fair' | 'fifo',
    };
  });
}

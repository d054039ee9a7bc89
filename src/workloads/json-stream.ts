/**
 * Hadoop's trace tools write JSON objects one after another rather than one array (SLS job traces
 * and node files, Rumen job traces: Jackson's writeValue per object). These read either form.
 */
import { MinimrError } from '../errors.js';

/**
 * Splits text holding one JSON array, or JSON objects one after another (separated by white space
 * or commas), into parsed values. `item` names what one object is, for the error messages.
 */
export function parseJsonStream(text: string, source: string, item = 'object'): unknown[] {
  const bad = (message: string): never => {
    throw new MinimrError('EBADCONF', `${source}: ${message}`);
  };
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    try {
      const v: unknown = JSON.parse(trimmed);
      return v as unknown[];
    } catch (err) {
      return bad(`not valid JSON: ${(err as Error).message}`);
    }
  }
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (c === '}') {
      depth--;
      if (depth === 0) {
        try {
          values.push(JSON.parse(text.slice(start, i + 1)));
        } catch (err) {
          bad(`${item} ${values.length + 1} is not valid JSON: ${(err as Error).message}`);
        }
      } else if (depth < 0) bad(`unbalanced "}" at character ${i}`);
    } else if (depth === 0 && !/\s|,/.test(c!)) bad(`unexpected "${c}" at character ${i} outside a ${item}`);
  }
  if (depth !== 0 || inString) bad(`the last ${item} is not closed`);
  return values;
}

export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** "an object with fields ..." for the first value, to say what a file of unknown format holds. */
export function describeJsonValues(values: readonly unknown[]): string {
  if (values.length === 0) return 'no JSON object at all';
  const first = values[0];
  if (!isJsonObject(first))
    return `${Array.isArray(first) ? 'a nested array' : `a ${first === null ? 'null' : typeof first}`} first`;
  const keys = Object.keys(first);
  if (keys.length === 0) return 'an empty object first';
  return `an object with fields ${keys
    .slice(0, 6)
    .map((k) => `"${k}"`)
    .join(', ')}${keys.length > 6 ? ', ...' : ''} first`;
}

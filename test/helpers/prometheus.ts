/**
 * A strict parser of Prometheus' text exposition format (0.0.4), for tests: it refuses what a
 * Prometheus server would refuse (bad names, bad escapes, samples without a TYPE, a family's lines
 * split apart, duplicate series, non-cumulative histogram buckets, a histogram without +Inf, _sum
 * or _count) and returns the samples.
 */
export interface ParsedSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface ParsedFamily {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  readonly help: string;
  readonly samples: ParsedSample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*';

function parseValue(text: string, line: number): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text))
    throw new Error(`line ${line}: bad value ${JSON.stringify(text)}`);
  return Number(text);
}

function parseLabels(text: string, line: number): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const m = new RegExp(`^(${LABEL})="`).exec(text.slice(i));
    if (!m) throw new Error(`line ${line}: bad label at ${JSON.stringify(text.slice(i))}`);
    const name = m[1]!;
    i += m[0].length;
    let value = '';
    for (;;) {
      const c = text[i];
      if (c === undefined) throw new Error(`line ${line}: unterminated label value`);
      if (c === '"') break;
      if (c === '\\') {
        const e = text[i + 1];
        if (e === '\\') value += '\\';
        else if (e === '"') value += '"';
        else if (e === 'n') value += '\n';
        else throw new Error(`line ${line}: bad escape \\${e}`);
        i += 2;
      } else {
        value += c;
        i++;
      }
    }
    i++;
    if (Object.hasOwn(labels, name)) throw new Error(`line ${line}: label ${name} twice`);
    labels[name] = value;
    if (text[i] === ',') i++;
    else if (i !== text.length) throw new Error(`line ${line}: expected , after a label`);
  }
  return labels;
}

export function parsePrometheusText(text: string): Map<string, ParsedFamily> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map<string, ParsedFamily>();
  const series = new Set<string>();
  const done = new Set<string>();
  let current: ParsedFamily | undefined;
  const lines = text.slice(0, -1).split('\n');
  lines.forEach((raw, i) => {
    const line = i + 1;
    if (raw === '') throw new Error(`line ${line}: empty line`);
    const meta = new RegExp(`^# (HELP|TYPE) (${NAME}) (.*)$`).exec(raw);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      let f = families.get(name);
      if (!f) {
        if (done.has(name)) throw new Error(`line ${line}: family ${name} split apart`);
        if (current) done.add(current.name);
        f = { name, type: 'untyped', help: '', samples: [] };
        families.set(name, f);
        current = f;
      } else if (f !== current || f.samples.length > 0)
        throw new Error(`line ${line}: ${kind} of ${name} after its samples`);
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest))
          throw new Error(`line ${line}: bad type ${rest}`);
        (f as { type: string }).type = rest;
      } else (f as { help: string }).help = rest.replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
      return;
    }
    if (raw.startsWith('#')) return;
    const m = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`).exec(raw);
    if (!m) throw new Error(`line ${line}: not a sample: ${raw}`);
    const [, name, labelText, valueText] = m as unknown as [string, string, string | undefined, string];
    if (!current) throw new Error(`line ${line}: sample ${name} before any TYPE`);
    const allowed =
      current.type === 'histogram'
        ? [`${current.name}_bucket`, `${current.name}_sum`, `${current.name}_count`]
        : [current.name];
    if (!allowed.includes(name))
      throw new Error(`line ${line}: sample ${name} does not belong to family ${current.name} (${current.type})`);
    const labels = labelText ? parseLabels(labelText, line) : {};
    const key = `${name}{${Object.entries(labels)
      .sort()
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(',')}}`;
    if (series.has(key)) throw new Error(`line ${line}: duplicate series ${key}`);
    series.add(key);
    current.samples.push({ name, labels, value: parseValue(valueText, line) });
  });
  for (const f of families.values()) {
    if (f.type !== 'histogram') continue;
    const groups = new Map<string, ParsedSample[]>();
    for (const s of f.samples) {
      const { le: _le, ...rest } = s.labels;
      const k = JSON.stringify(Object.entries(rest).sort());
      groups.set(k, [...(groups.get(k) ?? []), s]);
    }
    for (const group of groups.values()) {
      const buckets = group.filter((s) => s.name.endsWith('_bucket'));
      const count = group.find((s) => s.name.endsWith('_count'));
      if (!count || !group.some((s) => s.name.endsWith('_sum')))
        throw new Error(`histogram ${f.name} lacks _sum or _count`);
      const bounds = buckets.map((b) => parseValue(b.labels.le ?? '', 0));
      if (bounds.at(-1) !== Infinity) throw new Error(`histogram ${f.name} lacks the +Inf bucket`);
      for (let i = 1; i < buckets.length; i++) {
        if (!(bounds[i]! > bounds[i - 1]!)) throw new Error(`histogram ${f.name}: bucket bounds not increasing`);
        if (buckets[i]!.value < buckets[i - 1]!.value) throw new Error(`histogram ${f.name}: buckets not cumulative`);
      }
      if (buckets.at(-1)!.value !== count.value)
        throw new Error(`histogram ${f.name}: +Inf bucket differs from _count`);
    }
  }
  return families;
}

/** The value of the one sample of `name` whose labels include `labels`. */
export function sampleValue(
  families: Map<string, ParsedFamily>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const all = [...families.values()].flatMap((f) => f.samples);
  const found = all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length !== 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  return found[0]!.value;
}

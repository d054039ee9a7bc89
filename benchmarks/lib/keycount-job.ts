/**
 * KeyCount: input lines `key payload`; the reduce counts each key's records and checksums their
 * payloads. No combiner, so key skew reaches the reducers as it is (WordCount's combiner would fold
 * a hot key into one record per map).
 *
 * The reduce also does work in proportion to its input bytes, `params.workNsPerByte` ns per byte of
 * key + value, as a reduce doing real work per record would. `params.work` says what kind:
 *  - 'latency' (default): waiting (a reducer writing to a store, calling a service); the 4 workers of
 *    a local cluster on a 2-core machine then behave like 4 machines, as they would not if all of
 *    them needed the same 2 cores;
 *  - 'cpu': busy computing (then the reduce phase is bounded by the machine's cores whatever the
 *    assignment).
 * Either way a worker started with --cpu-throttle F takes F times as long for it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { codecs, defineJob, textInput, textOutput } from 'minimr';

/** Work owed but not yet done, ns; paid in slices of at least SLICE_NS to keep timer overhead low. */
let owedNs = 0;
const SLICE_NS = 20_000_000;

async function work(kind: string, force: boolean): Promise<void> {
  if (owedNs < SLICE_NS && !force) return;
  const ms = owedNs / 1e6;
  owedNs = 0;
  if (kind === 'cpu') {
    const until = performance.now() + ms;
    while (performance.now() < until) {
      // busy: this is the reduce's CPU work
    }
  } else if (ms >= 1) {
    await sleep(ms);
  }
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export default defineJob({
  name: 'keycount',
  input: textInput(),
  output: textOutput(),
  mapKey: codecs.text,
  mapValue: codecs.text,
  map(_offset, line, ctx) {
    const sp = line.indexOf(' ');
    if (sp > 0) ctx.emit(line.slice(0, sp), line.slice(sp + 1));
  },
  async reduce(key, values, ctx) {
    const nsPerByte = Number(ctx.params.workNsPerByte ?? 0);
    const kind = String(ctx.params.work ?? 'latency');
    const keyBytes = Buffer.byteLength(key);
    let records = 0;
    let checksum = 0;
    for (const v of values) {
      records++;
      checksum = (checksum + fnv1a(v)) >>> 0;
      owedNs += (keyBytes + Buffer.byteLength(v)) * nsPerByte;
    }
    await work(kind, false);
    ctx.emit(key, `${records}\t${checksum}`);
  },
  async cleanupReduce(ctx) {
    await work(String(ctx.params.work ?? 'latency'), true);
  },
});

/**
 * Test support for the reduce side: map outputs written directly with FramedFileWriter + encodeIndex
 * (not through the map-side collector), HTTP workers serving them, and the reduce input reference
 * (Array.sort + Buffer.compare over all records, stable in map order then emission order).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdir, open, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { lz4Codec, type BlockCodec } from '../../src/shuffle/codec.js';
import { FramedFileWriter } from '../../src/shuffle/frames.js';
import { encodeIndex } from '../../src/shuffle/index-file.js';
import { hashPartition } from '../../src/shuffle/partitioner.js';
import { mapOutputPaths } from '../../src/shuffle/paths.js';
import { createShuffleRequestHandler } from '../../src/shuffle/shuffle-handler.js';
import { newShuffleSecret } from '../../src/shuffle/shuffle-secret.js';
import type { MapOutputLocation, PartitionIndexEntry } from '../../src/shuffle/types.js';
import { isMinimrError, type MinimrError } from '../../src/errors.js';
import { randomBytes, rng, u32, type Rec } from './support.js';

export const JOB = 'job_reduce';
/** The shuffle secret of JOB, which the test workers know. */
export const SECRET = newShuffleSecret();

export interface Worker {
  readonly workerId: string;
  readonly rootDir: string;
  readonly server: Server;
  port: number;
  /** Shuffle request URLs seen, in order. */
  readonly requests: string[];
  inFlight: number;
  maxInFlight: number;
}

/** A worker's data server as the runtime would mount it: shuffle handler first, 404 otherwise. */
export async function startWorker(workerId: string, rootDir: string, delayMs = 0): Promise<Worker> {
  const handler = createShuffleRequestHandler({ rootDir, jobSecret: (jobId) => (jobId === JOB ? SECRET : undefined) });
  const worker: Worker = {
    workerId,
    rootDir,
    server: createServer(),
    port: 0,
    requests: [],
    inFlight: 0,
    maxInFlight: 0,
  };
  worker.server.on('request', (req, res) => {
    worker.requests.push(req.url ?? '');
    worker.inFlight++;
    worker.maxInFlight = Math.max(worker.maxInFlight, worker.inFlight);
    res.on('close', () => worker.inFlight--);
    // Unref'd: a test that stops the worker with a request still delayed need not wait for it.
    setTimeout(() => {
      if (!handler(req, res)) res.writeHead(404).end('not a shuffle url');
    }, delayMs).unref();
  });
  worker.server.listen(0, '127.0.0.1');
  await once(worker.server, 'listening');
  worker.port = (worker.server.address() as AddressInfo).port;
  return worker;
}

/** Two workers, wA and wB, serving map outputs from `tmp`/a and `tmp`/b. */
export async function twoWorkers(tmp: string, delayMs = 0): Promise<[Worker, Worker]> {
  return [await startWorker('wA', join(tmp, 'a'), delayMs), await startWorker('wB', join(tmp, 'b'), delayMs)];
}

export async function stopWorker(w: Worker): Promise<void> {
  w.server.closeAllConnections();
  await new Promise<void>((resolve) => w.server.close(() => resolve()));
}

/**
 * Writes one map output: per partition, records sorted by Buffer.compare (stable), as frames of
 * `frameRawBytes`. With `runs` 2, as a map that kept two generations of its buffer: the first half
 * of the records (emission order) in the first run of every partition, the rest in the second.
 * Returns, per partition, the totals of its runs and the runs' index entries.
 */
export async function writeMapOutput(
  dir: string,
  records: readonly Rec[],
  numPartitions: number,
  codec: BlockCodec = lz4Codec,
  frameRawBytes = 2048,
  runs: 1 | 2 = 1,
): Promise<WrittenPartition[]> {
  await mkdir(dir, { recursive: true });
  const fh = await open(`${dir}/file.out`, 'w');
  const entries: PartitionIndexEntry[][] = Array.from({ length: numPartitions }, () => []);
  const cut = runs === 1 ? records.length : Math.floor(records.length / 2);
  try {
    const writer = new FramedFileWriter(fh, codec, 1 << 16, frameRawBytes);
    for (const part of runs === 1 ? [records] : [records.slice(0, cut), records.slice(cut)]) {
      for (let p = 0; p < numPartitions; p++) {
        writer.beginSegment();
        const sorted = part.filter((r) => r.partition === p).sort((a, b) => Buffer.compare(a.key, b.key));
        for (const r of sorted) await writer.append(r.key, r.value);
        entries[p]!.push(await writer.endSegment());
      }
    }
    await writer.finish();
  } finally {
    await fh.close();
  }
  await writeFile(`${dir}/file.out.index`, encodeIndex(entries, codec.id));
  return entries.map((rs) => ({
    length: rs.reduce((n, r) => n + r.length, 0),
    rawLength: rs.reduce((n, r) => n + r.rawLength, 0),
    records: rs.reduce((n, r) => n + r.records, 0),
    runs: rs,
  }));
}

/** One partition of a map output writeMapOutput wrote. */
export interface WrittenPartition {
  readonly length: number;
  readonly rawLength: number;
  readonly records: number;
  readonly runs: readonly PartitionIndexEntry[];
}

export interface MapSpec {
  /** Records per map; maps of very different sizes make some segments go to disk. */
  readonly sizes: readonly number[];
  readonly numReduces: number;
  readonly seed: number;
  /** Key bytes drawn from a small alphabet, so equal keys across maps are common. */
  readonly keyLen?: number;
  readonly valueLen?: number;
  /** Runs per partition in every map output (default 1). */
  readonly runs?: 1 | 2;
}

/** Writes the maps of `spec`, round-robin over the workers; returns records and locations. */
export async function writeMaps(workers: readonly Worker[], spec: MapSpec) {
  const rand = rng(spec.seed);
  const mapRecords: Rec[][] = [];
  const locations: MapOutputLocation[] = [];
  const entries: WrittenPartition[][] = [];
  for (let m = 0; m < spec.sizes.length; m++) {
    const w = workers[m % workers.length]!;
    const attemptId = `attempt_m${m}_0`;
    const records: Rec[] = [];
    for (let i = 0; i < spec.sizes[m]!; i++) {
      const key = randomBytes(rand, spec.keyLen ?? 3, 5);
      // The value says where the record came from (map, emission index), plus some padding.
      const value = Buffer.concat([
        u32(m),
        u32(i),
        Buffer.alloc(Math.floor(rand() * (spec.valueLen ?? 24)), 0x61 + (i % 26)),
      ]);
      records.push({ partition: hashPartition(key, spec.numReduces), key, value });
    }
    entries.push(
      await writeMapOutput(
        mapOutputPaths(w.rootDir, JOB, attemptId).dir,
        records,
        spec.numReduces,
        lz4Codec,
        2048,
        spec.runs,
      ),
    );
    mapRecords.push(records);
    locations.push({ mapIndex: m, attemptId, workerId: w.workerId, host: '127.0.0.1', dataPort: w.port });
  }
  return { mapRecords, locations, entries };
}

/** The reduce input of partition r: all maps' records, map order then emission order, stably sorted by key. */
export function referenceInput(mapRecords: readonly Rec[][], r: number): string[] {
  return mapRecords
    .flat()
    .filter((x) => x.partition === r)
    .sort((a, b) => Buffer.compare(a.key, b.key))
    .map((x) => `${x.key.toString('hex')}:${x.value.toString('hex')}`);
}

export function assertFetchFailure(err: unknown, loc: MapOutputLocation, reduceIndex: number): boolean {
  assert.ok(isMinimrError(err, 'EFETCH'), `expected EFETCH, got ${String(err)}`);
  const e = err as MinimrError;
  assert.equal(e.details.jobId, JOB);
  assert.equal(e.details.mapIndex, loc.mapIndex);
  assert.equal(e.details.attemptId, loc.attemptId);
  assert.equal(e.details.reduceIndex, reduceIndex);
  assert.equal(e.details.workerId, loc.workerId);
  assert.match(e.message, /map will be re-run/);
  return true;
}

export async function flipByte(file: string, at: number): Promise<void> {
  const fh = await open(file, 'r+');
  try {
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, at);
    b[0] ^= 0x5a;
    await fh.write(b, 0, 1, at);
  } finally {
    await fh.close();
  }
}

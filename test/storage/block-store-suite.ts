import assert from 'node:assert/strict';
import { describe, it, beforeEach, afterEach } from 'node:test';
import { crc32 } from 'node:zlib';
import { isMinimrError } from '../../src/errors.js';
import { CHECKSUM_CHUNK_SIZE, type BlockStore } from '../../src/storage/index.js';
import { collect, pseudoRandomBytes } from './helpers.js';

export interface BlockStoreUnderTest {
  readonly store: BlockStore;
  /** Flips one stored byte of a block behind the store's back (bit rot). */
  corrupt(blockId: string, offset: number): Promise<void>;
  cleanup(): Promise<void>;
}

async function* chunked(data: Buffer, size: number): AsyncIterable<Buffer> {
  for (let i = 0; i < data.length; i += size) {
    await new Promise((r) => setImmediate(r));
    yield data.subarray(i, i + size);
  }
}

/**
 * The behaviour every BlockStore backend must share (in the spirit of abstract-level's test suite):
 * run it once per backend with a factory that makes a fresh, empty store.
 */
export function blockStoreSuite(name: string, makeStore: () => Promise<BlockStoreUnderTest>): void {
  describe(`BlockStore conformance: ${name}`, () => {
    let subject: BlockStoreUnderTest;
    let store: BlockStore;
    beforeEach(async () => {
      subject = await makeStore();
      store = subject.store;
    });
    afterEach(async () => {
      await subject.cleanup();
    });

    it('round-trips a Buffer and reports length and zlib crc32', async () => {
      const data = pseudoRandomBytes(3 * CHECKSUM_CHUNK_SIZE + 123, 1);
      const result = await store.write('blk_1', data);
      assert.deepEqual(result, { length: data.length, crc32: crc32(data) });
      assert.equal(Buffer.compare(await collect(store.read('blk_1')), data), 0);
      assert.deepEqual(await store.stat('blk_1'), { blockId: 'blk_1', length: data.length, crc32: crc32(data) });
    });

    it('round-trips a streamed source of odd-sized chunks', async () => {
      const data = pseudoRandomBytes(200_000, 2);
      const result = await store.write('blk_stream', chunked(data, 7_777));
      assert.equal(result.length, data.length);
      assert.equal(result.crc32, crc32(data));
      assert.equal(Buffer.compare(await collect(store.read('blk_stream')), data), 0);
    });

    it('stores an empty block', async () => {
      assert.deepEqual(await store.write('blk_empty', Buffer.alloc(0)), { length: 0, crc32: 0 });
      assert.equal((await collect(store.read('blk_empty'))).length, 0);
      assert.equal(await store.has('blk_empty'), true);
    });

    it(
      'readPieces: a piece of whole chunks carries the zlib crc32 of ' + 'its bytes, a piece cut inside a chunk none',
      async () => {
        const data = pseudoRandomBytes(20 * CHECKSUM_CHUNK_SIZE + 777, 4);
        await store.write('blk_p', data);
        for (const [start, end] of [
          [0, data.length],
          [100, data.length],
          [0, 3 * CHECKSUM_CHUNK_SIZE + 1],
        ] as const) {
          const pieces = [];
          for await (const piece of store.readPieces('blk_p', start, end)) pieces.push(piece);
          assert.equal(Buffer.compare(Buffer.concat(pieces.map((p) => p.bytes)), data.subarray(start, end)), 0);
          for (const { bytes, crc32: pieceCrc } of pieces)
            if (pieceCrc !== undefined) assert.equal(pieceCrc, crc32(bytes), `a piece of [${start}, ${end})`);
          // The first piece of [100, ...) starts inside a chunk: its CRC cannot come from the chunks'.
          if (start === 100) assert.equal(pieces[0]!.crc32, undefined);
          if (start === 0 && end === data.length) assert.ok(pieces.every((p) => p.crc32 !== undefined));
        }
      },
    );

    it('reads ranges, inside a chunk and across chunk boundaries, clamped to the block', async () => {
      const data = pseudoRandomBytes(2 * CHECKSUM_CHUNK_SIZE + 500, 3);
      await store.write('blk_r', data);
      const ranges: Array<[number, number]> = [
        [0, 1],
        [10, 20],
        [CHECKSUM_CHUNK_SIZE - 5, CHECKSUM_CHUNK_SIZE + 5],
        [CHECKSUM_CHUNK_SIZE, 2 * CHECKSUM_CHUNK_SIZE],
        [100, data.length],
        [data.length - 1, data.length],
        [5, 5],
      ];
      for (const [start, end] of ranges) {
        const got = await collect(store.read('blk_r', start, end));
        assert.equal(Buffer.compare(got, data.subarray(start, end)), 0, `range [${start}, ${end})`);
      }
      assert.equal(Buffer.compare(await collect(store.read('blk_r', 100)), data.subarray(100)), 0);
      assert.equal(Buffer.compare(await collect(store.read('blk_r', 100, data.length + 1000)), data.subarray(100)), 0);
      assert.equal((await collect(store.read('blk_r', data.length + 10, data.length + 20))).length, 0);
    });

    it('has, list and delete agree', async () => {
      await store.write('blk_a', Buffer.from('a'));
      await store.write('blk_b', Buffer.from('b'));
      assert.equal(await store.has('blk_a'), true);
      assert.equal(await store.has('blk_zzz'), false);
      assert.deepEqual((await store.list()).sort(), ['blk_a', 'blk_b']);
      assert.equal(await store.delete('blk_a'), true);
      assert.equal(await store.delete('blk_a'), false);
      assert.equal(await store.has('blk_a'), false);
      assert.deepEqual(await store.list(), ['blk_b']);
    });

    it('report lists every block with its length, as the block report sends it', async () => {
      await store.write('blk_r1', Buffer.alloc(70_000, 1));
      await store.write('blk_r2', Buffer.alloc(0));
      assert.deepEqual(
        [...(await store.report())].sort((a, b) => (a.blockId < b.blockId ? -1 : 1)),
        [
          { blockId: 'blk_r1', length: 70_000 },
          { blockId: 'blk_r2', length: 0 },
        ],
      );
      await store.delete('blk_r1');
      assert.deepEqual(await store.report(), [{ blockId: 'blk_r2', length: 0 }]);
    });

    it('replaces a block written twice', async () => {
      await store.write('blk_x', Buffer.from('first version'));
      await store.write('blk_x', Buffer.from('second'));
      assert.equal((await collect(store.read('blk_x'))).toString(), 'second');
      assert.deepEqual(await store.list(), ['blk_x']);
    });

    it('missing blocks fail with ENOENT naming the block', async () => {
      await assert.rejects(
        collect(store.read('blk_missing')),
        (err) => isMinimrError(err, 'ENOENT') && err.details.blockId === 'blk_missing',
      );
      await assert.rejects(store.stat('blk_missing'), (err) => isMinimrError(err, 'ENOENT'));
    });

    it('rejects block ids that could escape the store', async () => {
      for (const bad of ['../etc', 'a/b', '', 'a.b', 'x\0y', '..']) {
        await assert.rejects(store.write(bad, Buffer.from('x')), (err) => isMinimrError(err, 'EBADPATH'), bad);
        await assert.rejects(collect(store.read(bad)), (err) => isMinimrError(err, 'EBADPATH'), bad);
      }
    });

    it('a failing source leaves no block behind', async () => {
      async function* failing(): AsyncIterable<Buffer> {
        yield Buffer.alloc(100_000, 1);
        throw new Error('sender died');
      }
      await assert.rejects(store.write('blk_half', failing()), /sender died/);
      assert.equal(await store.has('blk_half'), false);
      assert.deepEqual(await store.list(), []);
    });

    it('detects a corrupt byte with ECHECKSUM {blockId, workerId}, only in the corrupt chunk', async () => {
      const data = pseudoRandomBytes(3 * CHECKSUM_CHUNK_SIZE, 4);
      await store.write('blk_c', data);
      await subject.corrupt('blk_c', 2 * CHECKSUM_CHUNK_SIZE + 17);
      await assert.rejects(
        collect(store.read('blk_c')),
        (err) =>
          isMinimrError(err, 'ECHECKSUM') && err.details.blockId === 'blk_c' && err.details.workerId === store.workerId,
      );
      // Ranges in the intact chunks still verify and read fine.
      const head = await collect(store.read('blk_c', 0, 2 * CHECKSUM_CHUNK_SIZE));
      assert.equal(Buffer.compare(head, data.subarray(0, 2 * CHECKSUM_CHUNK_SIZE)), 0);
      await assert.rejects(
        collect(store.read('blk_c', 2 * CHECKSUM_CHUNK_SIZE + 100, 2 * CHECKSUM_CHUNK_SIZE + 101)),
        (err) => isMinimrError(err, 'ECHECKSUM'),
      );
    });

    it('a source that refills one buffer for every chunk, once the next is asked for, is stored whole', async () => {
      // The contract the datanode's uploads (coalesced) and the local writer's copies rely on.
      const data = pseudoRandomBytes(5 * CHECKSUM_CHUNK_SIZE + 7, 5);
      const size = CHECKSUM_CHUNK_SIZE / 2 + 3;
      async function* refilled(): AsyncIterable<Buffer> {
        const one = Buffer.alloc(size);
        for (let i = 0; i < data.length; i += size) {
          await new Promise((r) => setImmediate(r));
          const n = data.copy(one, 0, i, i + size);
          yield one.subarray(0, n);
          one.fill(0xee);
        }
      }
      const result = await store.write('blk_refilled', refilled());
      assert.deepEqual(result, { length: data.length, crc32: crc32(data) });
      assert.equal(Buffer.compare(await collect(store.read('blk_refilled')), data), 0);
    });

    it('a caller reusing its buffer after write does not change the block', async () => {
      const data = Buffer.from('stable bytes');
      const expected = Buffer.from(data);
      await store.write('blk_reuse', data);
      data.fill(0);
      assert.equal(Buffer.compare(await collect(store.read('blk_reuse')), expected), 0);
    });
  });
}

import assert from 'node:assert/strict';
import { open, readdir } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import { LocalDiskBlockStore } from '../../src/storage/index.js';
import { coalesced } from '../../src/storage/block-store.js';
import { blockStoreSuite } from './block-store-suite.js';
import { collect, makeTempDir, pseudoRandomBytes } from './helpers.js';

blockStoreSuite('LocalDiskBlockStore', async () => {
  const { dir, cleanup } = await makeTempDir();
  const store = new LocalDiskBlockStore({ dir, workerId: 'w-disk' });
  await store.open();
  return {
    store,
    cleanup,
    async corrupt(blockId, offset) {
      const handle = await open(store.localBlockPath(blockId)!, 'r+');
      const one = Buffer.alloc(1);
      await handle.read(one, 0, 1, offset);
      one[0] = one[0]! ^ 0xff;
      await handle.write(one, 0, 1, offset);
      await handle.close();
    },
  };
});

/** Fails like a full disk after `budget` bytes. */
class FullDiskStore extends LocalDiskBlockStore {
  constructor(
    dir: string,
    private budget: number,
  ) {
    super({ dir, workerId: 'w-full' });
  }

  protected override async writeToFile(handle: FileHandle, data: Buffer): Promise<void> {
    if (data.length > this.budget) {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28 });
    }
    this.budget -= data.length;
    await super.writeToFile(handle, data);
  }
}

describe('LocalDiskBlockStore specifics', () => {
  // Issue 34: the message reaches clients, so it names the block and worker, never the worker's directory.
  it('disk full: EDISKFULL names the block and worker, not the dir, and no temp file stays', async () => {
    const { dir, cleanup } = await makeTempDir();
    try {
      const store = new FullDiskStore(dir, 1000);
      await store.open();
      await assert.rejects(
        store.write('blk_big', pseudoRandomBytes(5000)),
        (err) =>
          isMinimrError(err, 'EDISKFULL') &&
          err.details.blockId === 'blk_big' &&
          err.details.workerId === 'w-full' &&
          !err.message.includes(dir) &&
          !JSON.stringify(err.details).includes(dir),
      );
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
      assert.equal(await store.has('blk_big'), false);
    } finally {
      await cleanup();
    }
  });

  it('open() clears leftovers of a crashed write; blocks survive a restart', async () => {
    const { dir, cleanup } = await makeTempDir();
    try {
      const first = new LocalDiskBlockStore({ dir, workerId: 'w1' });
      await first.open();
      const data = pseudoRandomBytes(70_000);
      await first.write('blk_keep', data);
      const stray = await open(join(dir, 'tmp', 'blk_9.crashed.blk'), 'w');
      await stray.close();
      const second = new LocalDiskBlockStore({ dir, workerId: 'w1' });
      await second.open();
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
      assert.deepEqual(await second.list(), ['blk_keep']);
      assert.equal(Buffer.compare(await collect(second.read('blk_keep')), data), 0);
    } finally {
      await cleanup();
    }
  });

  it(
    'localBlockPath points at the data file; a second store on the ' + 'same dir (task process) reads it verified',
    async () => {
      const { dir, cleanup } = await makeTempDir();
      try {
        const store = new LocalDiskBlockStore({ dir, workerId: 'w1' });
        await store.open();
        assert.equal(store.localBlockPath('blk_1'), undefined);
        const data = pseudoRandomBytes(1000);
        await store.write('blk_1', data);
        const path = store.localBlockPath('blk_1');
        assert.ok(path?.startsWith(dir));
        const taskView = new LocalDiskBlockStore({ dir, workerId: 'w1' });
        assert.equal(Buffer.compare(await collect(taskView.read('blk_1', 10, 20)), data.subarray(10, 20)), 0);
        const handle = await open(path!, 'r+');
        await handle.write(Buffer.from([data[15]! ^ 1]), 0, 1, 15);
        await handle.close();
        await assert.rejects(collect(taskView.read('blk_1', 10, 20)), (err) => isMinimrError(err, 'ECHECKSUM'));
      } finally {
        await cleanup();
      }
    },
  );

  it('a truncated data file is a checksum error, not short data', async () => {
    const { dir, cleanup } = await makeTempDir();
    try {
      const store = new LocalDiskBlockStore({ dir, workerId: 'w1' });
      await store.open();
      await store.write('blk_t', pseudoRandomBytes(100_000));
      const handle = await open(store.localBlockPath('blk_t')!, 'r+');
      await handle.truncate(50_000);
      await handle.close();
      await assert.rejects(collect(store.read('blk_t')), (err) => isMinimrError(err, 'ECHECKSUM'));
    } finally {
      await cleanup();
    }
  });
});

describe('coalesced', () => {
  it('gives the bytes in pieces of the size asked (the last shorter), all in one reused buffer', async () => {
    const data = pseudoRandomBytes(10_000, 9);
    async function* sent(): AsyncIterable<Buffer> {
      for (let at = 0, n = 1; at < data.length; at += n, n = (n * 7 + 3) % 2500) yield data.subarray(at, at + n);
    }
    const pieces: Buffer[] = [];
    const memory = new Set<ArrayBufferLike>();
    for await (const piece of coalesced(sent(), 1024)) {
      // Copied before the next is asked for: the piece's memory is refilled then.
      pieces.push(Buffer.from(piece));
      memory.add(piece.buffer);
    }
    assert.deepEqual(
      pieces.map((p) => p.length),
      [...Array.from({ length: 9 }, () => 1024), 10_000 - 9 * 1024],
    );
    assert.equal(Buffer.compare(Buffer.concat(pieces), data), 0);
    assert.equal(memory.size, 1);
  });

  it('gives nothing for nothing', async () => {
    async function* none(): AsyncIterable<Buffer> {}
    for await (const _ of coalesced(none(), 16)) assert.fail('a piece from no bytes');
  });
});

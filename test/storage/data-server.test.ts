import assert from 'node:assert/strict';
import { request } from 'node:http';
import { open } from 'node:fs/promises';
import { describe, it, before, after } from 'node:test';
import { crc32 } from 'node:zlib';
import { isMinimrError } from '../../src/errors.js';
import {
  BLOCK_TOKEN_HEADER,
  CHECKSUM_CHUNK_SIZE,
  putRemoteBlock,
  readRemoteBlock,
  deleteRemoteBlock,
  replicateRemoteBlock,
  replicationScope,
} from '../../src/storage/index.js';
import {
  collect,
  makeTempDir,
  pseudoRandomBytes,
  startDatanode,
  stopDatanode,
  testBlockKey,
  tokenFor,
  type TestDatanode,
} from './helpers.js';

interface RawAnswer {
  status: number;
  body: string;
}

function raw(
  node: TestDatanode,
  method: string,
  path: string,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: node.address.host, port: node.address.dataPort, method, path, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('data server', () => {
  let cleanup: () => Promise<void>;
  let nodes: TestDatanode[];
  before(async () => {
    const temp = await makeTempDir();
    cleanup = temp.cleanup;
    nodes = [
      await startDatanode(temp.dir, 'w1', 'r1'),
      await startDatanode(temp.dir, 'w2', 'r1'),
      await startDatanode(temp.dir, 'w3', 'r2'),
    ];
  });
  after(async () => {
    await Promise.all(nodes.map(stopDatanode));
    await cleanup();
  });

  it('PUT stores, GET reads whole and ranged, DELETE removes', async () => {
    const [w1] = nodes;
    const data = pseudoRandomBytes(150_000, 21);
    const read = { token: tokenFor('blk_1', 'read') };
    const remove = { token: tokenFor('blk_1', 'delete') };
    assert.deepEqual(
      await putRemoteBlock(w1!.address, 'blk_1', data, {
        expectedCrc32: crc32(data),
        token: tokenFor('blk_1', 'write'),
      }),
      { length: data.length, crc32: crc32(data) },
    );
    assert.equal(Buffer.compare(await collect(w1!.store.read('blk_1')), data), 0);
    assert.equal(Buffer.compare(await collect(readRemoteBlock(w1!.address, 'blk_1', 0, data.length, read)), data), 0);
    assert.equal(
      Buffer.compare(
        await collect(readRemoteBlock(w1!.address, 'blk_1', 70_000, 70_010, read)),
        data.subarray(70_000, 70_010),
      ),
      0,
    );
    assert.equal(await deleteRemoteBlock(w1!.address, 'blk_1', remove), true);
    assert.equal(await w1!.store.has('blk_1'), false);
    assert.equal(await deleteRemoteBlock(w1!.address, 'blk_1', remove), false);
  });

  it('errors come back as JSON {code, message, details} with a status', async () => {
    const [w1] = nodes;
    const missing = await raw(w1!, 'GET', '/blocks/blk_none', undefined, {
      [BLOCK_TOKEN_HEADER]: tokenFor('blk_none', 'read'),
    });
    assert.equal(missing.status, 404);
    const parsed = JSON.parse(missing.body) as { code: string; message: string; details: Record<string, unknown> };
    assert.equal(parsed.code, 'ENOENT');
    assert.equal(parsed.details.blockId, 'blk_none');
    assert.equal(parsed.details.workerId, 'w1');
    await assert.rejects(
      collect(readRemoteBlock(w1!.address, 'blk_none', 0, 10, { token: tokenFor('blk_none', 'read') })),
      (err) => isMinimrError(err, 'ENOENT'),
    );

    const badRange = await raw(w1!, 'GET', '/blocks/blk_none?start=-1', undefined, {
      [BLOCK_TOKEN_HEADER]: tokenFor('blk_none', 'read'),
    });
    assert.equal(badRange.status, 400);
    const badMethod = await raw(w1!, 'PATCH', '/blocks/blk_1', undefined, {
      [BLOCK_TOKEN_HEADER]: tokenFor('blk_1', 'read'),
    });
    assert.equal(JSON.parse(badMethod.body).code, 'EPROTOCOL');
  });

  it('no URL escapes the block directory', async () => {
    const [w1] = nodes;
    for (const path of [
      '/blocks/..%2F..%2Fetc%2Fpasswd',
      '/blocks/%2e%2e',
      '/blocks/../../etc/passwd',
      '/blocks/a/b',
      '/blocks/',
      '/blocks/a.meta',
    ]) {
      const answer = await raw(w1!, 'GET', path);
      assert.ok(answer.status === 400 || answer.status === 404, `${path}: ${answer.status}`);
      if (answer.status === 400) assert.equal(JSON.parse(answer.body).code, 'EBADPATH', path);
    }
    const put = await raw(w1!, 'PUT', '/blocks/..%2Fescape', Buffer.from('x'));
    assert.equal(put.status, 400);
    assert.deepEqual(await w1!.store.list(), []);
  });

  it('URLs outside /blocks are left to other handlers', async () => {
    const answer = await raw(nodes[0]!, 'GET', '/shuffle/x');
    assert.equal(answer.status, 404);
    assert.equal(answer.body, 'not a data route');
  });

  it('an upload streamed in pieces of every size is stored byte for byte, its chunk checksums included', async () => {
    // The datanode stores an upload in 1 MiB writes of one reused buffer: pieces that straddle
    // its ends, a tail shorter than it, and a piece bigger than it must all land where they were sent.
    const [w1] = nodes;
    const data = pseudoRandomBytes(3 * (1 << 20) + 4321, 22);
    const sizes = [1, 65_535, 1 << 20, 3 * (1 << 19) + 11, 7, 40_000];
    async function* pieces(): AsyncIterable<Buffer> {
      for (let at = 0, i = 0; at < data.length; i++) {
        const n = sizes[i % sizes.length]!;
        yield Buffer.from(data.subarray(at, at + n));
        at += n;
      }
    }
    const put = await putRemoteBlock(w1!.address, 'blk_pieces', pieces(), {
      expectedCrc32: crc32(data),
      token: tokenFor('blk_pieces', 'write'),
    });
    assert.deepEqual(put, { length: data.length, crc32: crc32(data) });
    // A read verifies every 64 KiB chunk against the checksums stored at the write.
    assert.equal(Buffer.compare(await collect(w1!.store.read('blk_pieces')), data), 0);
  });

  it('an upload that does not match its crc32 is refused and not stored', async () => {
    const [w1] = nodes;
    await assert.rejects(
      putRemoteBlock(w1!.address, 'blk_crc', Buffer.from('payload'), {
        expectedCrc32: 12345,
        token: tokenFor('blk_crc', 'write'),
      }),
      (err) => isMinimrError(err, 'ECHECKSUM'),
    );
    assert.equal(await w1!.store.has('blk_crc'), false);
  });

  it('a corruption past the first megabyte arrives as an error after the good bytes', async () => {
    const [w1] = nodes;
    const data = pseudoRandomBytes(40 * CHECKSUM_CHUNK_SIZE, 22);
    await w1!.store.write('blk_mid', data);
    const badOffset = 30 * CHECKSUM_CHUNK_SIZE + 7;
    const handle = await open(w1!.store.localBlockPath('blk_mid')!, 'r+');
    await handle.write(Buffer.from([data[badOffset]! ^ 1]), 0, 1, badOffset);
    await handle.close();
    let received = 0;
    await assert.rejects(
      (async () => {
        for await (const chunk of readRemoteBlock(w1!.address, 'blk_mid', 0, data.length, {
          token: tokenFor('blk_mid', 'read'),
        })) {
          assert.equal(
            Buffer.compare(chunk, data.subarray(received, received + chunk.length)),
            0,
            'only good bytes are sent',
          );
          received += chunk.length;
        }
      })(),
      (err) => isMinimrError(err, 'ECHECKSUM') && err.details.blockId === 'blk_mid',
    );
    assert.equal(received, 16 * CHECKSUM_CHUNK_SIZE);
  });

  it('a reader that stops early does not wedge the datanode', async () => {
    const [w1] = nodes;
    const data = pseudoRandomBytes(6_000_000, 24);
    await w1!.store.write('blk_early', data);
    const read = { token: tokenFor('blk_early', 'read') };
    for (let i = 0; i < 3; i++) {
      for await (const chunk of readRemoteBlock(w1!.address, 'blk_early', 0, data.length, read)) {
        assert.ok(chunk.length > 0);
        break;
      }
    }
    assert.equal(
      Buffer.compare(await collect(readRemoteBlock(w1!.address, 'blk_early', 0, data.length, read)), data),
      0,
    );
  });

  it('replicate copies a local block to other datanodes', async () => {
    const [w1, w2, w3] = nodes;
    const data = pseudoRandomBytes(5_000_000, 23);
    await w1!.store.write('blk_rep', data);
    const targets = [w2!.address, w3!.address, { ...w3!.address, workerId: 'dead', dataPort: 1 }];
    const relay = testBlockKey.issue('blk_rep', 'replicate', Date.now() + 60_000, replicationScope(targets));
    const result = await replicateRemoteBlock(w1!.address, 'blk_rep', targets, { token: relay });
    assert.deepEqual(result.succeeded.sort(), ['w2', 'w3']);
    assert.deepEqual(
      result.failed.map((f) => [f.workerId, f.code]),
      [['dead', 'ECONNECT']],
    );
    for (const node of [w2!, w3!]) assert.equal(Buffer.compare(await collect(node.store.read('blk_rep')), data), 0);
    const bad = await raw(w1!, 'POST', '/blocks/blk_rep/replicate', Buffer.from('{"targets": [1]}'));
    assert.equal(bad.status, 400);
  });
});

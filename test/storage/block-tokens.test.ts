import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { isMinimrError } from '../../src/errors.js';
import {
  BLOCK_TOKEN_HEADER,
  BlockTokenKey,
  FsClient,
  putRemoteBlock,
  readRemoteBlock,
  replicateRemoteBlock,
  replicationScope,
  type DatanodeAddress,
} from '../../src/storage/index.js';
import {
  collect,
  makeTempDir,
  pseudoRandomBytes,
  startCluster,
  startDatanode,
  stopDatanode,
  testBlockKey,
  tokenFor,
  type TestCluster,
  type TestDatanode,
} from './helpers.js';

interface RawAnswer {
  status: number;
  code: string;
  message: string;
}

function raw(
  node: DatanodeAddress,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: node.host, port: node.dataPort, method, path, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let parsed: { code?: string; message?: string } = {};
        try {
          parsed = JSON.parse(text) as { code?: string; message?: string };
        } catch {
          // a block's bytes, not an error
        }
        resolve({ status: res.statusCode ?? 0, code: parsed.code ?? '', message: parsed.message ?? '' });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('block access tokens on the data port', () => {
  let cleanup: () => Promise<void>;
  let node: TestDatanode;
  let other: TestDatanode;
  const data = pseudoRandomBytes(70_000, 5);
  before(async () => {
    const temp = await makeTempDir();
    cleanup = temp.cleanup;
    node = await startDatanode(temp.dir, 'w1', 'r1');
    other = await startDatanode(temp.dir, 'w2', 'r1');
    await node.store.write('blk_7', data);
  });
  after(async () => {
    await Promise.all([stopDatanode(node), stopDatanode(other)]);
    await cleanup();
  });

  it('a read with a valid token is served', async () => {
    const got = await collect(
      readRemoteBlock(node.address, 'blk_7', 0, data.length, { token: tokenFor('blk_7', 'read') }),
    );
    assert.equal(Buffer.compare(got, data), 0);
  });

  it('missing, forged, expired and misused tokens are 403 ETOKEN, whatever the route', async () => {
    const forger = BlockTokenKey.generate();
    const cases: Array<[string, string, Record<string, string>]> = [
      ['no token', 'GET', {}],
      ['garbage', 'GET', { [BLOCK_TOKEN_HEADER]: 'not-a-token' }],
      ['another key', 'GET', { [BLOCK_TOKEN_HEADER]: forger.issue('blk_7', 'read', Date.now() + 60_000) }],
      ['expired', 'GET', { [BLOCK_TOKEN_HEADER]: testBlockKey.issue('blk_7', 'read', Date.now() - 1) }],
      ['another block', 'GET', { [BLOCK_TOKEN_HEADER]: tokenFor('blk_8', 'read') }],
      ['read token to write', 'PUT', { [BLOCK_TOKEN_HEADER]: tokenFor('blk_7', 'read') }],
      ['read token to delete', 'DELETE', { [BLOCK_TOKEN_HEADER]: tokenFor('blk_7', 'read') }],
      ['write token to delete', 'DELETE', { [BLOCK_TOKEN_HEADER]: tokenFor('blk_7', 'write') }],
      ['no token to delete', 'DELETE', {}],
    ];
    for (const [what, method, headers] of cases) {
      const answer = await raw(
        node.address,
        method,
        '/blocks/blk_7',
        headers,
        method === 'PUT' ? Buffer.from('evil') : undefined,
      );
      assert.equal(answer.status, 403, what);
      assert.equal(answer.code, 'ETOKEN', what);
      assert.match(answer.message, /block access token/, what);
    }
    // A token's expiry cannot be moved: the MAC covers it.
    const valid = tokenFor('blk_7', 'read');
    const stretched = `${Number(valid.split('.')[0]) + 3_600_000}.${valid.split('.')[1]}`;
    assert.equal((await raw(node.address, 'GET', '/blocks/blk_7', { [BLOCK_TOKEN_HEADER]: stretched })).code, 'ETOKEN');
    // Nothing was overwritten or deleted.
    assert.equal(Buffer.compare(await collect(node.store.read('blk_7')), data), 0);
  });

  it('the client gets ETOKEN as a MinimrError', async () => {
    await assert.rejects(collect(readRemoteBlock(node.address, 'blk_7', 0, 10)), (err) => isMinimrError(err, 'ETOKEN'));
    await assert.rejects(
      putRemoteBlock(node.address, 'blk_7', Buffer.from('evil'), { token: tokenFor('blk_7', 'read') }),
      (err) => isMinimrError(err, 'ETOKEN'),
    );
    assert.equal(Buffer.compare(await collect(node.store.read('blk_7')), data), 0);
  });

  it('a relay goes only to the targets its token names', async () => {
    const thief: DatanodeAddress = { workerId: 'w2', host: '127.0.0.1', dataPort: 1, rack: 'r1' };
    const granted = testBlockKey.issue('blk_7', 'replicate', Date.now() + 60_000, replicationScope([other.address]));
    // Same worker id, another port: the token does not cover it.
    await assert.rejects(replicateRemoteBlock(node.address, 'blk_7', [thief], { token: granted }), (err) =>
      isMinimrError(err, 'ETOKEN'),
    );
    await assert.rejects(
      replicateRemoteBlock(node.address, 'blk_7', [other.address, thief], { token: granted }),
      (err) => isMinimrError(err, 'ETOKEN'),
    );
    await assert.rejects(replicateRemoteBlock(node.address, 'blk_7', [other.address]), (err) =>
      isMinimrError(err, 'ETOKEN'),
    );
    assert.equal(await other.store.has('blk_7'), false);
    const result = await replicateRemoteBlock(node.address, 'blk_7', [other.address], { token: granted });
    assert.deepEqual(result.succeeded, ['w2']);
    assert.equal(Buffer.compare(await collect(other.store.read('blk_7')), data), 0);
  });

  it('a datanode that has no key yet serves nothing', async () => {
    const temp = await makeTempDir();
    const { LocalDiskBlockStore, createDataRequestHandler } = await import('../../src/storage/index.js');
    const { createServer } = await import('node:http');
    const store = new LocalDiskBlockStore({ dir: temp.dir, workerId: 'w9' });
    await store.open();
    await store.write('blk_7', data);
    const handler = createDataRequestHandler(store, 'w9', { blockKey: () => undefined });
    const server = createServer((req, res) => void handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address: DatanodeAddress = {
      workerId: 'w9',
      host: '127.0.0.1',
      dataPort: (server.address() as { port: number }).port,
      rack: 'r1',
    };
    try {
      const answer = await raw(address, 'GET', '/blocks/blk_7', { [BLOCK_TOKEN_HEADER]: tokenFor('blk_7', 'read') });
      assert.equal(answer.status, 403);
      assert.equal(answer.code, 'ETOKEN');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await temp.cleanup();
    }
  });
});

describe('the NameNode issues block access tokens', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startCluster(['r1', 'r1', 'r2'], { defaultBlockSize: 50_000, defaultReplication: 2 });
  });
  after(() => cluster.close());

  it('writes and reads through FsClient carry the tokens it issued', async () => {
    const fs = new FsClient({ namenode: cluster.namenode });
    const data = pseudoRandomBytes(120_000, 9);
    await fs.put(data, '/t/a');
    assert.equal(Buffer.compare(await collect(fs.cat('/t/a')), data), 0);
    const blocks = await cluster.namenode.getBlocks('/t/a');
    assert.equal(blocks.length, 3);
    // A read token of one block opens only that block.
    const [first, second] = blocks;
    await assert.rejects(
      collect(readRemoteBlock(second!.locations[0]!, second!.blockId, 0, 10, { token: first!.token })),
      (err) => isMinimrError(err, 'ETOKEN'),
    );
    const answer = await raw(
      first!.locations[0]!,
      'PUT',
      `/blocks/${first!.blockId}`,
      { [BLOCK_TOKEN_HEADER]: first!.token },
      Buffer.from('evil'),
    );
    assert.equal(answer.code, 'ETOKEN');
    assert.equal(crc32(await collect(fs.cat('/t/a'))), crc32(data));
  });

  it('relay tokens only for registered datanodes at their registered address', async () => {
    const [w1, w2] = cluster.datanodes;
    assert.throws(
      () => cluster.namenode.relayToken('blk_1', [{ workerId: 'evil', host: '10.0.0.66', dataPort: 80, rack: 'r1' }]),
      (err) => isMinimrError(err, 'ETOKEN'),
    );
    assert.throws(
      () => cluster.namenode.relayToken('blk_1', [{ ...w2!.address, host: '10.0.0.66' }]),
      (err) => isMinimrError(err, 'ETOKEN'),
    );
    const token = cluster.namenode.relayToken('blk_1', [w2!.address]);
    cluster.namenode.blockKey.verify(token, 'blk_1', 'replicate', Date.now(), replicationScope([w2!.address]));
    assert.throws(
      () => cluster.namenode.blockKey.verify(token, 'blk_1', 'replicate', Date.now(), replicationScope([w1!.address])),
      (err) => isMinimrError(err, 'ETOKEN'),
    );
  });
});

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import { Namenode, formatMode, parseMode, type DatanodeAddress } from '../../src/storage/index.js';
import { makeTempDir, silentLogger } from './helpers.js';

const DATANODE: DatanodeAddress = { workerId: 'w1', host: '127.0.0.1', dataPort: 1, rack: '/r1' };

async function withNamenode(test: (nn: Namenode, reopen: () => Promise<Namenode>) => Promise<void>): Promise<void> {
  const { dir, cleanup } = await makeTempDir();
  const dbPath = join(dir, 'nn');
  let nn = new Namenode({ dbPath, logger: silentLogger, superuser: 'root' });
  await nn.open();
  nn.registerDatanode(DATANODE, []);
  try {
    await test(nn, async () => {
      await nn.close();
      nn = new Namenode({ dbPath, logger: silentLogger, superuser: 'root' });
      await nn.open();
      return nn;
    });
  } finally {
    await nn.close();
    await cleanup();
  }
}

const eperm = (err: unknown) => isMinimrError(err, 'EPERM');

describe('NameNode owners and mode bits', () => {
  const alice = { user: 'alice', superuser: false };
  const bob = { user: 'bob', superuser: false };
  const root = { user: 'root', superuser: true };

  it(
    'gives new paths their creator as owner, 755/644, the parent ' +
      'group; the root is a sticky 1777 of the superuser',
    async () => {
      await withNamenode(async (nn) => {
        await nn.mkdir('/a/b', { parents: true }, alice);
        await nn.create('/a/b/f', {}, alice);
        await nn.complete('/a/b/f', undefined, alice);
        const rootStatus = await nn.stat('/');
        assert.deepEqual([rootStatus.owner, rootStatus.group, rootStatus.mode], ['root', 'supergroup', 0o1777]);
        const [dir] = await nn.list('/a', alice);
        assert.deepEqual([dir!.path, dir!.owner, dir!.group, dir!.mode], ['/a/b', 'alice', 'supergroup', 0o755]);
        const file = await nn.stat('/a/b/f', bob);
        assert.deepEqual([file.owner, file.mode], ['alice', 0o644]);
      });
    },
  );

  it("refuses another user's writes, removes and renames with EPERM; the superuser and the owner may", async () => {
    await withNamenode(async (nn) => {
      await nn.mkdir('/a', {}, alice);
      await nn.create('/a/f', {}, alice);
      await nn.complete('/a/f', undefined, alice);
      await assert.rejects(nn.remove('/a/f', {}, bob), eperm);
      await assert.rejects(
        nn.remove('/a', { recursive: true }, bob),
        eperm,
        "the sticky root protects alice's directory",
      );
      await assert.rejects(nn.create('/a/g', {}, bob), eperm);
      await assert.rejects(nn.create('/a/f', { overwrite: true }, bob), eperm);
      await assert.rejects(nn.mkdir('/a/sub', {}, bob), eperm);
      await assert.rejects(nn.mkdir('/a/x/y', { parents: true }, bob), eperm);
      await assert.rejects(nn.rename('/a/f', '/f', bob), eperm);
      await assert.rejects(nn.rename('/a', '/b', bob), eperm);
      // bob may still make his own top-level directory, and read alice's file (644).
      await nn.mkdir('/bob', {}, bob);
      assert.equal((await nn.getBlocks('/a/f', undefined, bob)).length, 0);
      await nn.rename('/a/f', '/a/f2', alice);
      await nn.remove('/a', { recursive: true }, root);
      await assert.rejects(nn.stat('/a'), (err: unknown) => isMinimrError(err, 'ENOENT'));
    });
  });

  it("refuses a recursive remove of a tree holding another user's directory it cannot write", async () => {
    await withNamenode(async (nn) => {
      await nn.mkdir('/shared', {}, alice);
      await nn.chmod('/shared', '777', alice);
      await nn.mkdir('/shared/bobs', {}, bob);
      await nn.create('/shared/bobs/f', {}, bob);
      await nn.complete('/shared/bobs/f', undefined, bob);
      await assert.rejects(nn.remove('/shared', { recursive: true }, alice), eperm);
      assert.equal((await nn.stat('/shared/bobs/f')).owner, 'bob', 'nothing was removed');
    });
  });

  it('lets only the writer add blocks to a file being written', async () => {
    await withNamenode(async (nn) => {
      await nn.create('/f', {}, alice);
      await assert.rejects(nn.allocateBlock('/f', undefined, bob), eperm);
      await assert.rejects(nn.complete('/f', undefined, bob), eperm);
      await assert.rejects(nn.abandon('/f', bob), eperm);
      const block = await nn.allocateBlock('/f', undefined, alice);
      await nn.commitBlock('/f', { blockId: block.blockId, length: 3, crc32: 1, workerIds: ['w1'] }, alice);
      await nn.complete('/f', undefined, alice);
      assert.equal((await nn.stat('/f')).length, 3);
    });
  });

  it('enforces read and execute bits: a private directory cannot be listed, entered or read by others', async () => {
    await withNamenode(async (nn) => {
      await nn.mkdir('/private', {}, alice);
      await nn.create('/private/f', {}, alice);
      await nn.complete('/private/f', undefined, alice);
      await nn.chmod('/private', '700', alice);
      await assert.rejects(nn.list('/private', bob), eperm);
      await assert.rejects(nn.stat('/private/f', bob), eperm);
      await assert.rejects(nn.getBlocks('/private/f', undefined, bob), eperm);
      assert.equal((await nn.list('/private', alice)).length, 1);
      await nn.chmod('/private/f', '600', alice);
      await nn.chmod('/private', '755', alice);
      await assert.rejects(nn.getBlocks('/private/f', undefined, bob), eperm, 'a 600 file is not readable by others');
    });
  });

  it('lets the owner or the superuser chmod, and only the superuser chown; ownership survives a restart', async () => {
    await withNamenode(async (nn, reopen) => {
      await nn.mkdir('/d', {}, alice);
      await assert.rejects(nn.chmod('/d', '777', bob), eperm);
      await assert.rejects(nn.chown('/d', 'bob', null, {}, alice), eperm);
      await assert.rejects(nn.chown('/d', 'bad name', null, {}, root), (err: unknown) =>
        isMinimrError(err, 'EBADCONF'),
      );
      await assert.rejects(nn.chmod('/d', '9', alice), (err: unknown) => isMinimrError(err, 'EBADCONF'));
      await nn.mkdir('/d/e', {}, alice);
      await nn.chown('/d', 'bob', 'staff', { recursive: true }, root);
      await nn.chmod('/d', '1750', root);
      const again = await reopen();
      const d = await again.stat('/d');
      assert.deepEqual([d.owner, d.group, d.mode], ['bob', 'staff', 0o1750]);
      assert.equal((await again.stat('/d/e')).owner, 'bob');
      await again.mkdir('/d/e/x', {}, bob);
    });
  });
});

describe('mode bits as text', () => {
  it('formats like ls -l and parses octal', () => {
    assert.equal(formatMode('dir', 0o1777), 'drwxrwxrwt');
    assert.equal(formatMode('dir', 0o1640), 'drw-r----T');
    assert.equal(formatMode('file', 0o644), '-rw-r--r--');
    assert.equal(parseMode('0755'), 0o755);
    assert.equal(parseMode('1777'), 0o1777);
    assert.throws(
      () => parseMode('rwx'),
      (err: unknown) => isMinimrError(err, 'EBADCONF'),
    );
    assert.throws(
      () => parseMode('7777'),
      (err: unknown) => isMinimrError(err, 'EBADCONF'),
    );
  });
});

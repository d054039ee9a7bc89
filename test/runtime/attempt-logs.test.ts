import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, utimes, mkdir, readdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { BLOCK_TOKEN_HEADER, BlockTokenKey } from '../../src/storage/index.js';
import { MAX_LOG_READ_BYTES } from '../../src/runtime/wire/index.js';
import {
  AttemptLog,
  attemptLogTokenId,
  createAttemptLogRequestHandler,
  fetchAttemptLog,
  logReadRange,
  pruneAttemptLogs,
} from '../../src/runtime/worker/attempt-logs.js';

describe('attempt logs on a worker: files with a cap, served in slices', () => {
  let root: string;
  let server: Server;
  let dataUrl: string;
  const where = { jobId: 'job_1_0001', attemptId: 'attempt_job_1_0001_m_000000_0', workerId: 'w0' };
  const key = BlockTokenKey.generate();
  const tokenFor = (attemptId: string, expiresAt = Date.now() + 60_000) =>
    key.issue(attemptLogTokenId(where.jobId, attemptId), 'read', expiresAt);
  const token = tokenFor(where.attemptId);

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'minimr-logs-'));
    const handler = createAttemptLogRequestHandler(root, { blockKey: () => key });
    server = createServer((req, res) => {
      if (!handler(req, res)) res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const addr = server.address();
    dataUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(root, { recursive: true, force: true });
  });

  it('keeps each stream up to its cap and says how much was dropped', async () => {
    const log = await AttemptLog.open(root, where.jobId, 'capped', 10);
    log.write('stdout', 'abcdef');
    log.write('stdout', Buffer.from('ghijkl'));
    log.write('stderr', 'oops\n');
    log.note('attempt failed: ETASK: boom');
    await log.close();
    const out = await readFile(join(root, where.jobId, 'capped', 'stdout'), 'utf8');
    assert.equal(
      out,
      'abcdefghij\n[minimr] 2 more bytes of stdout dropped: an attempt keeps at most 10 bytes of each stream\n',
    );
    assert.equal(
      await readFile(join(root, where.jobId, 'capped', 'stderr'), 'utf8'),
      'oops\n[minimr] attempt failed: ETASK: boom\n',
    );
  });

  it('serves the tail by default, any range on request, and never more than the read cap', async () => {
    const text = Array.from({ length: 5000 }, (_, i) => `line ${i}\n`).join('');
    const log = await AttemptLog.open(root, where.jobId, where.attemptId);
    log.write('stdout', text);
    await log.close();
    const total = Buffer.byteLength(text);
    const tail = await fetchAttemptLog(dataUrl, where, 'stdout', token, undefined, 100);
    assert.equal(tail.size, total);
    assert.equal(tail.offset, total - 100);
    assert.equal(tail.text, text.slice(total - 100));
    const middle = await fetchAttemptLog(dataUrl, where, 'stdout', token, 7, 20);
    assert.equal(middle.text, text.slice(7, 27));
    const past = await fetchAttemptLog(dataUrl, where, 'stdout', token, total + 5, 10);
    assert.equal(past.text, '');
    const empty = await fetchAttemptLog(dataUrl, where, 'stderr', token);
    assert.deepEqual([empty.size, empty.text], [0, '']);
    await assert.rejects(
      fetchAttemptLog(dataUrl, where, 'stdout', token, 0, MAX_LOG_READ_BYTES + 1),
      (e: unknown) => e instanceof MinimrError && e.code === 'EBADREQUEST',
    );
    await assert.rejects(
      fetchAttemptLog(dataUrl, { ...where, attemptId: 'nope' }, 'stdout', tokenFor('nope')),
      (e: unknown) => e instanceof MinimrError && e.code === 'ENOENT',
    );
  });

  it('serves a log only with a token the JobTracker issued for that attempt, unexpired', async () => {
    const url = `${dataUrl}/logs/${where.jobId}/${where.attemptId}/stdout`;
    const refused = async (headers: Record<string, string>) => {
      const res = await fetch(url, { headers });
      assert.equal(res.status, 403);
      assert.equal(((await res.json()) as { code: string }).code, 'ETOKEN');
    };
    await refused({});
    await refused({ [BLOCK_TOKEN_HEADER]: tokenFor('attempt_job_1_0001_m_000001_0') });
    await refused({ [BLOCK_TOKEN_HEADER]: tokenFor(where.attemptId, Date.now() - 1) });
    await refused({
      [BLOCK_TOKEN_HEADER]: BlockTokenKey.generate().issue(
        attemptLogTokenId(where.jobId, where.attemptId),
        'read',
        Date.now() + 60_000,
      ),
    });
    await refused({
      [BLOCK_TOKEN_HEADER]: key.issue(attemptLogTokenId(where.jobId, where.attemptId), 'write', Date.now() + 60_000),
    });
    assert.equal((await fetch(url, { headers: { [BLOCK_TOKEN_HEADER]: token } })).status, 200);
  });

  it('refuses paths that are not job and attempt ids', async () => {
    // Even with a token signed for it: the path check does not rely on the JobTracker's.
    const signed = key.issue(attemptLogTokenId('../../etc', 'passwd'), 'read', Date.now() + 60_000);
    const res = await fetch(`${dataUrl}/logs/..%2F..%2Fetc/passwd/stdout`, {
      headers: { [BLOCK_TOKEN_HEADER]: signed },
    });
    assert.equal(res.status, 400);
    const res2 = await fetch(`${dataUrl}/logs/${where.jobId}/${where.attemptId}/environ`);
    assert.equal(res2.status, 400);
  });

  it('computes ranges: tail by default, clipped to the file', () => {
    assert.deepEqual(logReadRange(1000, undefined, 100), { start: 900, end: 1000 });
    assert.deepEqual(logReadRange(50, undefined, 100), { start: 0, end: 50 });
    assert.deepEqual(logReadRange(1000, 990, 100), { start: 990, end: 1000 });
    assert.throws(() => logReadRange(10, -1, 5), /non-negative/);
  });

  it('prunes job directories older than the retention', async () => {
    const old = join(root, 'job_old');
    await mkdir(join(old, 'a'), { recursive: true });
    const past = new Date(Date.now() - 48 * 3600_000);
    await utimes(old, past, past);
    assert.equal(await pruneAttemptLogs(root, 24), 1);
    const left = await readdir(root);
    assert.ok(!left.includes('job_old') && left.includes(where.jobId), left.join(','));
  });
});

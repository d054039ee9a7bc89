/**
 * The s3:// store's configuration and URI checks, which need no server (test/cluster/s3-store.test.ts
 * runs the store against a real one): bad `--conf s3.*` values are EBADCONF naming the key, URIs that
 * are not s3:// or climb with '..' are EBADPATH, before any request is sent.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { createS3Store } from '../../src/storage/stores/index.js';

const credentials = { accessKeyId: 'k', secretAccessKey: 's' };

function code(expected: string, pattern: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof MinimrError, String(err));
    assert.equal(err.code, expected);
    assert.match(err.message, pattern);
    return true;
  };
}

describe('s3:// store configuration', () => {
  it('refuses bad --conf values naming the key', () => {
    assert.throws(() => createS3Store({ 's3.pathStyle': 'yes' }), code('EBADCONF', /s3\.pathStyle/));
    assert.throws(() => createS3Store({ 's3.partSize': '1024' }), code('EBADCONF', /s3\.partSize/));
    assert.throws(() => createS3Store({ 's3.maxAttempts': '0' }), code('EBADCONF', /s3\.maxAttempts/));
    assert.throws(() => createS3Store({ 's3.endpoint': 'localhost:9000' }), code('EBADCONF', /s3\.endpoint/));
  });

  it('refuses URIs that are not s3:// or that climb out with ..', async () => {
    const store = createS3Store({ 's3.endpoint': 'http://127.0.0.1:1' }, { credentials });
    assert.equal(store.scheme, 's3');
    await assert.rejects(store.stat('file:///etc/passwd'), code('EBADPATH', /not an s3:\/\/ URI/));
    await assert.rejects(store.list('s3://bucket/a/../../b'), code('EBADPATH', /'\.\.'/));
    await assert.rejects(store.create('s3://bucket/'), code('EISDIR', /bucket/));
  });
});

import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { publicError, redactPrivatePaths, registerPrivateDir, unregisterPrivateDir } from '../../src/util/index.js';

describe('private paths in errors that leave a host', () => {
  registerPrivateDir('/srv/minimr/worker/', "w1's data directory");
  registerPrivateDir('/srv/minimr/worker/blocks', "w1's block directory");
  after(() => {
    unregisterPrivateDir('/srv/minimr/worker');
    unregisterPrivateDir('/srv/minimr/worker/blocks');
  });

  it('replaces a private directory and the path under it, the longest directory first', () => {
    assert.equal(
      redactPrivatePaths('disk full while writing block blk_7 in /srv/minimr/worker/blocks/tmp/blk_7.data'),
      "disk full while writing block blk_7 in [w1's block directory]",
    );
    assert.equal(
      redactPrivatePaths("cannot open '/srv/minimr/worker/shuffle/job_1/a.idx': EIO, or /srv/minimr/worker"),
      "cannot open '[w1's data directory]': EIO, or [w1's data directory]",
    );
  });

  it('leaves what only starts like a private directory, and block store paths, as they are', () => {
    for (const text of [
      'no such file or directory: /srv/minimr/worker2/x',
      'no such file or directory: /user/bob/srv/minimr/worker',
      'permission denied: /data/in',
    ])
      assert.equal(redactPrivatePaths(text), text);
    assert.equal(redactPrivatePaths('/srv/minimr/worker2/x'), '/srv/minimr/worker2/x');
  });

  it('publicError hides paths in the message and string details and drops the stack', () => {
    const shown = publicError({
      code: 'EDISKFULL',
      message: 'disk full in /srv/minimr/worker/blocks',
      details: { dir: '/srv/minimr/worker/blocks', blockId: 'blk_7', length: 3 },
      stack: 'Error: at /srv/minimr/worker/x.js:1',
    });
    assert.deepEqual(shown, {
      code: 'EDISKFULL',
      message: "disk full in [w1's block directory]",
      details: { dir: "[w1's block directory]", blockId: 'blk_7', length: 3 },
    });
  });
});

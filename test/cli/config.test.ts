import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { commandOf, configFor, configPathOf, readConfigFile } from '../../src/cli/config.js';
import { MinimrError } from '../../src/errors.js';

describe('--config minimr.json', () => {
  let dir: string;
  const write = async (name: string, content: unknown) => {
    const file = join(dir, name);
    await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-config-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('finds the file and the command in raw arguments', () => {
    assert.equal(configPathOf(['fs', 'ls', '--config', 'a.json']), 'a.json');
    assert.equal(configPathOf(['--config=b.json', 'worker']), 'b.json');
    assert.equal(configPathOf(['fs', 'ls']), undefined);
    assert.throws(() => configPathOf(['fs', '--config']), /takes a file name/);
    assert.equal(commandOf(['--config', 'a.json', 'worker', '--rack', '/r']), 'worker');
  });

  it('refuses a file that is not usable, naming the file and the key', async () => {
    const bad = async (content: unknown, pattern: RegExp) =>
      assert.rejects(
        readConfigFile(await write('bad.json', content)),
        (e: unknown) =>
          e instanceof MinimrError &&
          e.code === 'EBADCONF' &&
          pattern.test(e.message) &&
          e.message.includes('bad.json'),
      );
    await bad('{ "worker": ', /not valid JSON/);
    await bad([], /JSON object of sections/);
    await bad({ workers: {} }, /unknown section "workers"/);
    await bad({ worker: 3 }, /"worker" must be an object/);
    await bad({ worker: { rack: { a: 1 } } }, /"worker.rack" must be a string, a number/);
    await bad(
      { client: { jobtracker: 'ws://x:1', overwrite: true } },
      /holds only "jobtracker", "secret-file", "user", "tls-ca"/,
    );
    await assert.rejects(readConfigFile(join(dir, 'missing.json')), /cannot read the config file/);
  });

  it('a command gets its section, client commands the client section under their own', async () => {
    const sections = await readConfigFile(
      await write('ok.json', {
        client: { jobtracker: 'ws://a:1' },
        fs: { jobtracker: 'ws://b:2' },
        worker: { rack: '/r1', 'map-slots': 4 },
      }),
    );
    assert.deepEqual(configFor(sections, 'fs'), { jobtracker: 'ws://b:2' });
    assert.deepEqual(configFor(sections, 'job'), { jobtracker: 'ws://a:1' });
    assert.deepEqual(configFor(sections, 'worker'), { rack: '/r1', 'map-slots': 4 });
    assert.deepEqual(configFor(sections, 'jobtracker'), {});
  });
});

import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { describe, it } from 'node:test';
import {
  isLoopbackAddress,
  localAddressToward,
  loopbackAdvertisedWarning,
} from '../../src/runtime/worker/advertised-host.js';

describe("a worker's advertised address", () => {
  it('tells loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1'])
      assert.ok(isLoopbackAddress(h), h);
    for (const h of ['10.0.0.1', '192.168.1.2', '::ffff:10.0.0.1', 'fe80::1', 'worker-3'])
      assert.ok(!isLoopbackAddress(h), h);
  });

  it('warns only of loopback advertised to a JobTracker elsewhere', () => {
    assert.match(
      loopbackAdvertisedWarning('127.0.0.1', '10.0.0.1') ?? '',
      /loopback address 127\.0\.0\.1 .* JobTracker at 10\.0\.0\.1: other machines cannot reach it/,
    );
    assert.equal(loopbackAdvertisedWarning('127.0.0.1', '127.0.0.1'), undefined);
    assert.equal(loopbackAdvertisedWarning('127.0.0.1', '0.0.0.0'), undefined, 'ws://0.0.0.0 is this machine');
    assert.equal(loopbackAdvertisedWarning('10.0.0.5', '10.0.0.1'), undefined);
  });

  it('is the local address of the route to the JobTracker', async () => {
    assert.equal(await localAddressToward('ws://127.0.0.1:7700'), '127.0.0.1');
    assert.ok(['127.0.0.1', '::1'].includes(await localAddressToward('ws://localhost:7700')));
    // This machine's own non-loopback address routes to itself: the local address is that one.
    const own = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal);
    if (own) assert.equal(await localAddressToward(`ws://${own.address}:7700`), own.address);
    await assert.rejects(localAddressToward('not a url'), /not a JobTracker URL/);
  });
});

import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AddressInfo } from 'node:net';
import {
  AUTHORITY_CERT_FILE,
  AUTHORITY_KEY_FILE,
  ClusterAuthority,
  SERVER_KEY_FILE,
  authorityToTrust,
  certificateFingerprint,
  certificateSerial,
  fetchPinnedAuthority,
  isLoopbackHost,
  makeJoinToken,
  newKeyPair,
  parseJoinToken,
} from '../../src/runtime/wire/index.js';
import { BlockTokenKey } from '../../src/storage/index.js';
import { MinimrError } from '../../src/errors.js';

const SECRET = 'a'.repeat(64);

describe('cluster certificate authority', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-tls-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('is made once in its directory, private key mode 0600, and reused', async () => {
    const a = await ClusterAuthority.loadOrCreate(dir);
    const b = await ClusterAuthority.loadOrCreate(dir);
    assert.equal(a.certificate, b.certificate);
    assert.equal((await stat(join(dir, AUTHORITY_KEY_FILE))).mode & 0o777, 0o600);
    const ca = new X509Certificate(await readFile(join(dir, AUTHORITY_CERT_FILE)));
    assert.equal(ca.ca, true);
    assert.ok(ca.verify(ca.publicKey), 'self-signed');
    assert.equal(a.fingerprint, certificateFingerprint(a.certificate));
    // Independent reference: Node's own fingerprint is the same SHA-256, colon-separated upper case.
    assert.equal(a.fingerprint, ca.fingerprint256.replaceAll(':', '').toLowerCase());
  });

  it("serial numbers are DER's minimal positive INTEGERs, whatever the random bytes", () => {
    // 0x00 then a byte below 0x80 was a padded INTEGER, refused by OpenSSL (about one certificate in 250).
    for (const first of [
      [0x00, 0x01],
      [0x00, 0xff],
      [0x80, 0x00],
      [0xff, 0xff],
      [0x7f, 0x00],
    ]) {
      const serial = certificateSerial(Buffer.from([...first, ...Array(14).fill(7)]));
      assert.equal(serial.length, 16);
      assert.ok(serial[0]! >= 0x40 && serial[0]! < 0x80, `first byte ${serial[0]} from ${first}`);
    }
  });

  it('certifies a key for the hosts named, and only those', async () => {
    const authority = await ClusterAuthority.loadOrCreate(dir);
    const pair = newKeyPair();
    const pem = await authority.issue(pair.publicKey, ['10.0.0.11', 'worker-1.example']);
    const cert = new X509Certificate(pem);
    const ca = new X509Certificate(authority.certificate);
    assert.ok(cert.checkIssued(ca) && cert.verify(ca.publicKey));
    assert.equal(cert.ca, false);
    assert.equal(cert.checkIP('10.0.0.11'), '10.0.0.11');
    assert.equal(cert.checkHost('worker-1.example'), 'worker-1.example');
    assert.equal(cert.checkIP('10.0.0.12'), undefined);
    assert.equal(cert.publicKey.export({ type: 'spki', format: 'pem' }), pair.publicKey);
    await assert.rejects(
      authority.issue('not a key', ['10.0.0.1']),
      (e: unknown) => (e as MinimrError).code === 'EPROTOCOL',
    );
  });

  it("keeps the server's identity while it covers the hosts, and issues a new one otherwise", async () => {
    const authority = await ClusterAuthority.loadOrCreate(dir);
    const first = await authority.serverIdentity(dir, ['127.0.0.1']);
    const again = await authority.serverIdentity(dir, ['127.0.0.1']);
    assert.deepEqual(again.cert, first.cert);
    assert.equal((await stat(join(dir, SERVER_KEY_FILE))).mode & 0o777, 0o600);
    const wider = await authority.serverIdentity(dir, ['127.0.0.1', '10.1.2.3']);
    assert.notDeepEqual(wider.cert, first.cert);
    assert.ok(new X509Certificate(wider.cert).checkIP('10.1.2.3'));
  });

  it('a client pinning the authority takes it from the chain; another pin is refused before anything is sent', async () => {
    const authority = await ClusterAuthority.loadOrCreate(dir);
    const identity = await authority.serverIdentity(dir, ['127.0.0.1']);
    let requests = 0;
    const server = createServer({ cert: identity.cert, key: identity.key }, (_req, res) => {
      requests++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      assert.equal(await fetchPinnedAuthority('127.0.0.1', port, authority.fingerprint), authority.certificate);
      const url = `wss://127.0.0.1:${port}`;
      assert.equal((await authorityToTrust(url, undefined, authority.fingerprint))!.toString(), authority.certificate);
      const other = await ClusterAuthority.loadOrCreate(join(dir, 'other'));
      await assert.rejects(authorityToTrust(url, undefined, other.fingerprint), (e: unknown) => {
        assert.ok(e instanceof MinimrError);
        assert.equal(e.code, 'EAUTH');
        assert.match(e.message, /does not match the pinned authority/);
        return true;
      });
      // The leaf's own fingerprint is not an authority: pinning it is refused too.
      const leaf = certificateFingerprint(identity.cert);
      await assert.rejects(fetchPinnedAuthority('127.0.0.1', port, leaf), /does not match the pinned authority/);
      assert.equal(requests, 0);
    } finally {
      server.close();
    }
  });

  it('tells loopback hosts from the others', () => {
    for (const h of ['127.0.0.1', '127.0.1.1', '::1', '[::1]', 'localhost']) assert.ok(isLoopbackHost(h), h);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'example.org', '128.0.0.1']) assert.ok(!isLoopbackHost(h), h);
  });
});

describe('join tokens', () => {
  const ca = 'ab'.repeat(32);
  it('round-trip the daemon and the user variants', () => {
    const daemon = makeJoinToken({ url: 'wss://10.0.0.1:7700', ca, secret: SECRET });
    assert.match(daemon, /^minimr-join-1\.[A-Za-z0-9_-]+$/);
    assert.deepEqual(parseJoinToken(daemon), { url: 'wss://10.0.0.1:7700', ca, secret: SECRET });
    // Independent reference: the body is base64url of the JSON.
    const body = JSON.parse(Buffer.from(daemon.slice('minimr-join-1.'.length), 'base64url').toString('utf8'));
    assert.deepEqual(body, { url: 'wss://10.0.0.1:7700', ca, secret: SECRET });
    const user = `minimr-join-1.${Buffer.from(JSON.stringify({ url: 'wss://h:1', ca, user: 'bob', key: 'k'.repeat(43) })).toString('base64url')}`;
    assert.deepEqual(parseJoinToken(user), { url: 'wss://h:1', ca, user: 'bob', key: 'k'.repeat(43) });
    assert.deepEqual(parseJoinToken(makeJoinToken({ url: 'ws://127.0.0.1:7700', secret: SECRET })), {
      url: 'ws://127.0.0.1:7700',
      secret: SECRET,
    });
  });

  it('refuse malformed tokens with EBADCONF saying what is wrong', () => {
    const enc = (o: unknown): string => `minimr-join-1.${Buffer.from(JSON.stringify(o)).toString('base64url')}`;
    const cases: Array<[string, RegExp]> = [
      ['nonsense', /does not start with minimr-join-1\./],
      ['minimr-join-1.!!!', /not base64url/],
      [`minimr-join-1.${Buffer.from('[1').toString('base64url')}`, /not base64url of JSON/],
      [enc({ ca, secret: SECRET }), /no "url"/],
      [enc({ url: 'http://x:1', secret: SECRET }), /ws:\/\/ or wss:\/\//],
      [enc({ url: 'wss://x:1', secret: SECRET }), /must pin/],
      [enc({ url: 'wss://x:1', ca: 'xyz', secret: SECRET }), /64 lower-case hex/],
      [enc({ url: 'wss://x:1', ca }), /neither/],
      [enc({ url: 'wss://x:1', ca, secret: SECRET, user: 'bob', key: 'k'.repeat(43) }), /not both/],
      [enc({ url: 'wss://x:1', ca, secret: 'short' }), /shorter than 16/],
      [enc({ url: 'wss://x:1', ca, secret: SECRET, extra: 1 }), /unknown field "extra"/],
    ];
    for (const [token, why] of cases) {
      assert.throws(
        () => parseJoinToken(token),
        (e: unknown) => e instanceof MinimrError && e.code === 'EBADCONF' && why.test(e.message),
        token,
      );
    }
  });
});

describe('block token key ring', () => {
  const now = 1_700_000_000_000;
  it('accepts the current and the previous key, and refuses older ones naming the key', () => {
    const namenode = BlockTokenKey.generate();
    const datanode = BlockTokenKey.parse(namenode.toString());
    const t0 = namenode.issue('blk_1', 'read', now + 60_000);
    datanode.verify(t0, 'blk_1', 'read', now);
    namenode.roll();
    const t1 = namenode.issue('blk_1', 'read', now + 60_000);
    assert.notEqual(namenode.currentKeyId, Number(t0.split('.')[0]));
    // A datanode that has not heard of the new key yet refuses its tokens, saying so.
    assert.throws(() => datanode.verify(t1, 'blk_1', 'read', now), /signed with key \d+, which this datanode/);
    datanode.replaceWith(BlockTokenKey.parse(namenode.toString()));
    datanode.verify(t1, 'blk_1', 'read', now);
    datanode.verify(t0, 'blk_1', 'read', now); // the previous key is still accepted
    namenode.roll();
    datanode.replaceWith(BlockTokenKey.parse(namenode.toString()));
    assert.throws(
      () => datanode.verify(t0, 'blk_1', 'read', now),
      (e: unknown) => e instanceof MinimrError && e.code === 'ETOKEN' && /no longer/.test(e.message),
    );
    datanode.verify(t1, 'blk_1', 'read', now);
    assert.equal(namenode.toString().split(',').length, 2);
  });

  it('binds block, operation, expiry and key id', () => {
    const ring = BlockTokenKey.generate();
    const token = ring.issue('blk_1', 'read', now + 1000);
    assert.throws(() => ring.verify(token, 'blk_2', 'read', now), /not valid/);
    assert.throws(() => ring.verify(token, 'blk_1', 'write', now), /not valid/);
    assert.throws(() => ring.verify(token, 'blk_1', 'read', now + 1000), /expired/);
    const [id, expiry, mac] = token.split('.');
    assert.throws(() => ring.verify(`${id}.${Number(expiry) + 1}.${mac}`, 'blk_1', 'read', now), /not valid/);
    const forged = BlockTokenKey.generate().issue('blk_1', 'read', now + 1000);
    assert.throws(
      () => ring.verify(forged, 'blk_1', 'read', now),
      (e: unknown) => (e as MinimrError).code === 'ETOKEN',
    );
    assert.throws(() => BlockTokenKey.parse('1:short'), /id:key/);
  });
});

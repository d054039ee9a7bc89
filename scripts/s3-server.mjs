#!/usr/bin/env node
/**
 * A real S3-protocol server for the tests of the `s3://` store: Ceph's RADOS Gateway (radosgw, Debian's
 * `radosgw` package, Ceph 16 "Pacific"), on a one-monitor, one-OSD Ceph cluster kept in memory
 * (the OSD's `memstore`), every daemon bound to 127.0.0.1 only, in a fresh temporary directory.
 *
 *   node scripts/s3-server.mjs            installs the Debian packages when missing (apt-get), starts the
 *                                         cluster, prints one JSON line {endpoint, region, accessKeyId,
 *                                         secretAccessKey, dir} on stdout, and runs until SIGTERM/SIGINT
 *                                         (or its stdin closes), then stops the daemons and removes the dir.
 *   node scripts/s3-server.mjs --install  only makes sure the packages are there.
 *
 * Why radosgw: the S3 servers on npm either lack multipart uploads' abort and listing (s3rver, fauxqs,
 * which also checks no signature) or do not install from the npm registry alone (Scality's CloudServer
 * depends on git repositories). radosgw is the S3 implementation of a production storage system and
 * implements what the store relies on: SigV4 authentication, ListObjectsV2 with a delimiter, ranged
 * GETs with If-Match (412), multipart uploads with ListMultipartUploads and AbortMultipartUpload.
 * Installing it takes about 15 s (64 packages, about 60 MB); starting a cluster about 12 s, most of it
 * the first radosgw-admin call creating radosgw's pools.
 *
 * Authentication inside the cluster is cephx with keys made here; S3 clients authenticate with the fixed
 * test key pair below. Nothing listens beyond loopback.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const TEST_ACCESS_KEY_ID = 'minimrtestaccesskey';
export const TEST_SECRET_ACCESS_KEY = 'minimr-test-secret-key-not-for-production';
const PACKAGES = ['radosgw', 'ceph-mon', 'ceph-osd'];
const BINARIES = ['radosgw', 'radosgw-admin', 'ceph-mon', 'ceph-osd', 'ceph', 'ceph-authtool', 'monmaptool'];

function log(message) {
  process.stderr.write(`s3-server: ${message}\n`);
}

function findBinary(name) {
  for (const dir of ['/usr/bin', '/usr/sbin', '/bin', '/sbin', '/usr/local/bin']) {
    if (existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** Installs Ceph's daemons from Debian when any is missing; throws saying why it cannot. */
export function ensureInstalled() {
  if (BINARIES.every((b) => findBinary(b) !== undefined)) return;
  if (findBinary('apt-get') === undefined) throw new Error(`no ${BINARIES.join('/')} and no apt-get to install them`);
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  const run = (args) => {
    const [command, ...rest] = [...sudo, ...args];
    execFileSync(command, rest, {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  };
  const started = Date.now();
  log(`installing Debian's ${PACKAGES.join(' ')} with apt-get (once per machine)`);
  // Another test may be installing its own tool at the same time: wait for dpkg's lock, do not fail.
  const lock = ['-o', 'DPkg::Lock::Timeout=120'];
  run(['apt-get', ...lock, 'update', '-qq']);
  run(['apt-get', ...lock, 'install', '-y', '-qq', '--no-install-recommends', ...PACKAGES]);
  log(`installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const missing = BINARIES.filter((b) => findBinary(b) === undefined);
  if (missing.length > 0) throw new Error(`installed ${PACKAGES.join(' ')} but ${missing.join(', ')} not found`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitForHttp(url, deadlineMs, isAlive) {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (!isAlive()) throw new Error('radosgw exited while starting');
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`radosgw did not answer on ${url} within ${deadlineMs} ms`);
}

/** Starts the cluster; returns its endpoint and a stop function. */
export async function startS3Server() {
  ensureInstalled();
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'minimr-s3-'));
  for (const sub of ['mon', 'osd', 'run', 'log']) mkdirSync(join(dir, sub));
  const [monPort, rgwPort] = [await freePort(), await freePort()];
  const conf = join(dir, 'ceph.conf');
  const keyring = join(dir, 'keyring');
  const fsid = randomUUID();
  writeFileSync(
    conf,
    [
      '[global]',
      `fsid = ${fsid}`,
      `mon host = v2:127.0.0.1:${monPort}`,
      'public addr = 127.0.0.1',
      'cluster addr = 127.0.0.1',
      'ms bind msgr1 = false',
      'auth allow insecure global id reclaim = false',
      'osd pool default size = 1',
      'osd pool default min size = 1',
      'mon allow pool size one = true',
      'mon warn on pool no redundancy = false',
      'mon data avail warn = 1',
      'mon data avail crit = 0',
      'osd objectstore = memstore',
      `memstore device bytes = ${2 * 1024 ** 3}`,
      'osd crush chooseleaf type = 0',
      'osd pool default pg autoscale mode = off',
      'osd pool default pg num = 8',
      'osd pool default pgp num = 8',
      'mon max pg per osd = 1000',
      `run dir = ${dir}/run`,
      `admin socket = ${dir}/run/$name.asok`,
      `log file = ${dir}/log/$name.log`,
      `pid file = ${dir}/run/$name.pid`,
      `keyring = ${keyring}`,
      `mon data = ${dir}/mon`,
      `osd data = ${dir}/osd`,
      '[client.rgw]',
      `rgw frontends = beast endpoint=127.0.0.1:${rgwPort}`,
      '',
    ].join('\n'),
  );
  const quiet = { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 };
  const tool = (name, args) => execFileSync(findBinary(name) ?? name, args, quiet);
  tool('ceph-authtool', ['--create-keyring', keyring, '--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *']);
  const caps = {
    'client.admin': ['--cap', 'mon', 'allow *', '--cap', 'osd', 'allow *', '--cap', 'mgr', 'allow *'],
    'client.rgw': ['--cap', 'mon', 'allow rw', '--cap', 'osd', 'allow rwx'],
    'osd.0': ['--cap', 'mon', 'allow profile osd', '--cap', 'osd', 'allow *'],
  };
  for (const [name, c] of Object.entries(caps)) tool('ceph-authtool', [keyring, '--gen-key', '-n', name, ...c]);
  tool('monmaptool', ['--create', '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, '--fsid', fsid, join(dir, 'monmap')]);
  tool('ceph-mon', ['-c', conf, '--mkfs', '-i', 'a', '--monmap', join(dir, 'monmap'), '--keyring', keyring]);

  const daemons = [];
  const daemon = (name, args) => {
    const child = spawn(findBinary(name) ?? name, ['-c', conf, '-f', ...args], { stdio: 'ignore' });
    const entry = { name, child, exited: false };
    child.on('exit', () => {
      entry.exited = true;
    });
    daemons.push(entry);
    return entry;
  };
  const stop = async () => {
    for (const d of [...daemons].reverse()) {
      if (!d.exited) d.child.kill('SIGTERM');
    }
    const until = Date.now() + 2000;
    while (daemons.some((d) => !d.exited) && Date.now() < until) await sleep(50);
    for (const d of daemons) if (!d.exited) d.child.kill('SIGKILL');
    while (daemons.some((d) => !d.exited) && Date.now() < until + 2000) await sleep(20);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    daemon('ceph-mon', ['-i', 'a']);
    tool('ceph', ['-c', conf, 'osd', 'create']);
    tool('ceph-osd', ['-c', conf, '-i', '0', '--mkfs']);
    daemon('ceph-osd', ['-i', '0']);
    tool('radosgw-admin', [
      '-c',
      conf,
      'user',
      'create',
      '--uid=minimr',
      '--display-name=minimr tests',
      `--access-key=${TEST_ACCESS_KEY_ID}`,
      `--secret=${TEST_SECRET_ACCESS_KEY}`,
    ]);
    const rgw = daemon('radosgw', ['-n', 'client.rgw']);
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await waitForHttp(endpoint, 60_000, () => !rgw.exited);
    log(`radosgw up at ${endpoint} in ${((Date.now() - started) / 1000).toFixed(1)} s (data in ${dir})`);
    return {
      endpoint,
      region: 'us-east-1',
      accessKeyId: TEST_ACCESS_KEY_ID,
      secretAccessKey: TEST_SECRET_ACCESS_KEY,
      dir,
      stop,
    };
  } catch (err) {
    await stop();
    const stderr = err && typeof err === 'object' && 'stderr' in err ? String(err.stderr ?? '') : '';
    throw new Error(`starting the Ceph cluster failed: ${err instanceof Error ? err.message : err} ${stderr}`);
  }
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  try {
    if (process.argv.includes('--install')) {
      ensureInstalled();
    } else {
      const server = await startS3Server();
      const { stop, ...info } = server;
      process.stdout.write(`${JSON.stringify(info)}\n`);
      let stopping = false;
      const shutdown = async () => {
        if (stopping) return;
        stopping = true;
        await stop();
        process.exit(0);
      };
      process.on('SIGTERM', shutdown);
      process.on('SIGINT', shutdown);
      process.stdin.on('end', shutdown);
      process.stdin.on('error', shutdown);
      process.stdin.resume();
    }
  } catch (err) {
    log(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}

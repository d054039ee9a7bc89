/**
 * The address a worker advertises for its data port when `--host` is not given: the local
 * address of the route to the JobTracker, the one the JobTracker and the other workers (on the
 * same network) can reach it at. A UDP socket `connect`ed to the JobTracker gives it without
 * sending a packet. A worker that advertises a loopback address to a JobTracker on another
 * address is unreachable for every other machine (its map outputs cannot be fetched): that is
 * warned about, at the worker and at the JobTracker.
 */
import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { MinimrError } from '../../errors.js';
import { isLoopbackHost } from '../wire/index.js';

/** Loopback, or the unspecified address (`ws://0.0.0.0:7700` reaches this machine too). */
export function isLoopbackAddress(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return isLoopbackHost(h) || h === '0.0.0.0' || h === '::';
}

/** Host part of a ws:// URL, without IPv6 brackets. */
export function hostOfUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new MinimrError('EBADCONF', `not a JobTracker URL: ${url} (expected ws://HOST:PORT)`);
  }
  return parsed.hostname.replace(/^\[|\]$/g, '');
}

/** The local address this machine uses to reach `url`'s host (no packet is sent). */
export async function localAddressToward(url: string): Promise<string> {
  const host = hostOfUrl(url);
  const target = isIP(host) ? { address: host, family: isIP(host) } : await lookup(host);
  if (isLoopbackAddress(target.address)) return target.family === 6 ? '::1' : '127.0.0.1';
  const socket = createSocket(target.family === 6 ? 'udp6' : 'udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(9, target.address, () => resolve());
    });
    return socket.address().address;
  } catch (err) {
    throw new MinimrError(
      'ECONNECT',
      `no route to the JobTracker ${host} to find this worker's address (${(err as Error).message}); give --host`,
    );
  } finally {
    socket.close();
  }
}

/**
 * The warning for a worker that advertises `advertised` to a JobTracker at `jobTrackerHost`, or undefined when that is
 * fine.
 */
export function loopbackAdvertisedWarning(advertised: string, jobTrackerHost: string): string | undefined {
  if (!isLoopbackAddress(advertised) || isLoopbackAddress(jobTrackerHost)) return undefined;
  return (
    `this worker advertises the loopback address ${advertised} for ` +
    `its data port to a JobTracker at ${jobTrackerHost}: other ` +
    `machines cannot reach it there, and every reduce that needs its ` +
    `map outputs will fail to fetch them; give --host with an ` +
    `address they can reach (or leave it out to use the route to the ` +
    `JobTracker)`
  );
}

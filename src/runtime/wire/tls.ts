/**
 * The cluster's own certificate authority, so that every link that leaves a host is TLS without an
 * operator having to run a PKI (issue 34).
 *
 * A JobTracker that listens beyond loopback makes, on first start, an ECDSA P-256 authority (key and
 * self-signed certificate, in its directory, the key mode 0600) and a certificate for itself signed
 * by it; both are reused on later starts. A worker makes a key pair of its own and sends the public
 * key in its registration, over the TLS link it already checked; the JobTracker answers with a
 * certificate for the worker's advertised host, which its data port (blocks, shuffle, logs) then
 * serves. Every client of a data port trusts that one authority, nothing else.
 *
 * How a newcomer learns which authority to trust: the join token (join-token.ts) carries the SHA-256
 * fingerprint of the authority's certificate. The newcomer connects once without trusting anything,
 * looks for a certificate with that fingerprint in the chain the server presents, and from then on
 * trusts that certificate as its only authority (the real connection is fully verified against it,
 * host name included). A chain without it is refused, and nothing is sent on that connection.
 *
 * Certificates are made with PKIjs over Node's WebCrypto (Node 20's crypto module cannot make a
 * certificate); keys are made and kept as PEM by Node's crypto.
 */
import { createHash, generateKeyPairSync, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { MinimrError } from '../../errors.js';

/** A certificate (PEM, the chain up to the authority) and its private key (PEM): what a TLS server serves. */
export interface TlsIdentity {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** File names in the JobTracker's directory. */
export const AUTHORITY_CERT_FILE = 'ca.pem';
export const AUTHORITY_KEY_FILE = 'ca-key.pem';
export const SERVER_CERT_FILE = 'tls-cert.pem';
export const SERVER_KEY_FILE = 'tls-key.pem';

/** The authority lasts 10 years; the certificates it signs 1 year (a JobTracker's is renewed at start when due). */
const AUTHORITY_DAYS = 3650;
const LEAF_DAYS = 365;
/** A certificate with less than this left is issued again. */
const RENEW_BEFORE_MS = 30 * 86_400_000;
const DAY_MS = 86_400_000;
const ECDSA = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const OID = {
  commonName: '2.5.4.3',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

/** A WebCrypto key, as PKIjs takes it. */
type CryptoKey = Parameters<pkijs.Certificate['sign']>[0];
let engine: pkijs.CryptoEngine | undefined;
function cryptoEngine(): pkijs.CryptoEngine {
  engine ??= new pkijs.CryptoEngine({
    name: 'node',
    crypto: webcrypto as unknown as ConstructorParameters<typeof pkijs.CryptoEngine>[0]['crypto'],
  });
  return engine;
}

/** Whether `host` names this machine's loopback only: a JobTracker listening there stays plain text. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return (
    h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
  );
}

/** SHA-256 of a certificate's DER, lower-case hex: what a join token pins. */
export function certificateFingerprint(pem: string | Buffer): string {
  return createHash('sha256').update(new X509Certificate(pem).raw).digest('hex');
}

/** A new ECDSA P-256 key pair, PEM (SPKI public, PKCS#8 private). */
export function newKeyPair(): { publicKey: string; privateKey: string } {
  return generateKeyPairSync('ec', {
    namedCurve: 'prime256v1',
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
}

function pemBody(pem: string, label: string): Uint8Array {
  const m = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]+)-----END ${label}-----`).exec(pem);
  if (!m) throw new MinimrError('EBADCONF', `not a PEM ${label.toLowerCase()}`);
  return new Uint8Array(Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'));
}

function toPem(der: ArrayBuffer | Uint8Array, label: string): string {
  const b64 = Buffer.from(der instanceof Uint8Array ? der : new Uint8Array(der)).toString('base64');
  return `-----BEGIN ${label}-----\n${b64.replace(/.{1,64}/g, '$&\n')}-----END ${label}-----\n`;
}

function directoryName(commonName: string): pkijs.RelativeDistinguishedNames {
  return new pkijs.RelativeDistinguishedNames({
    // One attribute: a name of several in one RDN would have to be DER-sorted to compare equal.
    typesAndValues: [
      new pkijs.AttributeTypeAndValue({ type: OID.commonName, value: new asn1js.Utf8String({ value: commonName }) }),
    ],
  });
}

function extension(extnID: string, critical: boolean, value: { toSchema(): asn1js.AsnType }): pkijs.Extension {
  return new pkijs.Extension({ extnID, critical, extnValue: value.toSchema().toBER(false) });
}

/** Key usage bits (RFC 5280 4.2.1.3), as a DER BIT STRING. */
function keyUsage(bits: readonly number[]): { toSchema(): asn1js.AsnType } {
  let byte = 0;
  for (const bit of bits) byte |= 0x80 >> bit;
  let unused = 0;
  while (unused < 7 && (byte & (1 << unused)) === 0) unused++;
  return { toSchema: () => new asn1js.BitString({ valueHex: new Uint8Array([byte]), unusedBits: unused }) };
}

function altNames(hosts: readonly string[]): pkijs.AltName {
  return new pkijs.AltName({
    altNames: hosts.map((h) => {
      if (isIP(h) === 0) return new pkijs.GeneralName({ type: 2, value: h });
      return new pkijs.GeneralName({ type: 7, value: new asn1js.OctetString({ valueHex: ipBytes(h) }) });
    }),
  });
}

function ipBytes(ip: string): Uint8Array {
  if (isIP(ip) === 4) return new Uint8Array(ip.split('.').map(Number));
  // IPv6: expand `::` and write the 8 groups.
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = Number.parseInt(g || '0', 16);
    out[2 * i] = n >> 8;
    out[2 * i + 1] = n & 0xff;
  });
  return out;
}

async function importPrivateKey(pem: string): Promise<CryptoKey> {
  return (await webcrypto.subtle.importKey('pkcs8', pemBody(pem, 'PRIVATE KEY'), ECDSA, false, [
    'sign',
  ])) as unknown as CryptoKey;
}

async function importPublicKey(pem: string): Promise<CryptoKey> {
  return (await webcrypto.subtle.importKey('spki', pemBody(pem, 'PUBLIC KEY'), ECDSA, true, [
    'verify',
  ])) as unknown as CryptoKey;
}

interface CertificateRequest {
  readonly commonName: string;
  readonly publicKey: string;
  readonly days: number;
  readonly authority: boolean;
  readonly hosts: readonly string[];
}

/**
 * A certificate's serial number from random bytes, as DER wants an INTEGER: positive (high bit of
 * the first byte clear) and minimal (first byte not zero). A random first byte of 0x00 followed by
 * one below 0x80 is a padded INTEGER, which OpenSSL refuses ("illegal padding"): about one
 * certificate in 250 failed to load before (24 of 5000 in a trial).
 */
export function certificateSerial(random: Buffer): Buffer {
  const serial = Buffer.from(random);
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  return serial;
}

async function makeCertificate(
  request: CertificateRequest,
  issuerName: string,
  signingKey: CryptoKey,
): Promise<string> {
  const cert = new pkijs.Certificate();
  cert.version = 2;
  cert.serialNumber = new asn1js.Integer({ valueHex: certificateSerial(randomBytes(16)) });
  cert.issuer = directoryName(issuerName);
  cert.subject = directoryName(request.commonName);
  const now = Date.now();
  cert.notBefore.value = new Date(now - 3600_000); // clocks a little apart
  cert.notAfter.value = new Date(now + request.days * DAY_MS);
  await cert.subjectPublicKeyInfo.importKey(await importPublicKey(request.publicKey), cryptoEngine());
  const keyId = createHash('sha1').update(cert.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView).digest();
  cert.extensions = request.authority
    ? [
        extension(OID.basicConstraints, true, new pkijs.BasicConstraints({ cA: true, pathLenConstraint: 0 })),
        extension(OID.keyUsage, true, keyUsage([0, 5, 6])), // digitalSignature, keyCertSign, cRLSign
        extension(OID.subjectKeyIdentifier, false, { toSchema: () => new asn1js.OctetString({ valueHex: keyId }) }),
      ]
    : [
        extension(OID.basicConstraints, true, new pkijs.BasicConstraints({ cA: false })),
        extension(OID.keyUsage, true, keyUsage([0])), // digitalSignature (ECDHE key exchange)
        extension(OID.extKeyUsage, false, new pkijs.ExtKeyUsage({ keyPurposes: [OID.serverAuth, OID.clientAuth] })),
        extension(OID.subjectAltName, false, altNames(request.hosts)),
      ];
  await cert.sign(signingKey, 'SHA-256', cryptoEngine());
  return toPem(cert.toSchema(true).toBER(false), 'CERTIFICATE');
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new MinimrError('EBADCONF', `cannot read ${path}: ${(err as Error).message}`);
  }
}

async function writePrivate(path: string, text: string): Promise<void> {
  await writeFile(path, text, { mode: 0o600 });
  await chmod(path, 0o600);
}

/** Whether `pem` is a certificate for every one of `hosts`, valid for a while yet, and signed by `authority`. */
function coversHosts(pem: string, hosts: readonly string[], authority: X509Certificate): boolean {
  try {
    const cert = new X509Certificate(pem);
    if (!cert.checkIssued(authority) || !cert.verify(authority.publicKey)) return false;
    if (Date.parse(cert.validTo) - Date.now() < RENEW_BEFORE_MS) return false;
    return hosts.every((h) => (isIP(h) ? cert.checkIP(h) !== undefined : cert.checkHost(h) !== undefined));
  } catch {
    return false;
  }
}

function commonNameOf(cert: X509Certificate): string {
  return (
    cert.subject
      .split('\n')
      .find((l) => l.startsWith('CN='))
      ?.slice(3) ?? ''
  );
}

/** The cluster's certificate authority: the JobTracker holds its key; everyone else its certificate. */
export class ClusterAuthority {
  readonly fingerprint: string;
  private readonly x509: X509Certificate;

  private constructor(
    /** The authority's certificate, PEM: public, given to every worker, client and task process. */
    readonly certificate: string,
    private readonly signingKey: CryptoKey,
  ) {
    this.x509 = new X509Certificate(certificate);
    this.fingerprint = certificateFingerprint(certificate);
  }

  /** The authority kept in `dir` (ca.pem, ca-key.pem), made there on first use. */
  static async loadOrCreate(dir: string): Promise<ClusterAuthority> {
    const certPath = join(dir, AUTHORITY_CERT_FILE);
    const keyPath = join(dir, AUTHORITY_KEY_FILE);
    let cert = await readIfExists(certPath);
    let key = await readIfExists(keyPath);
    if (cert === undefined || key === undefined) {
      await mkdir(dir, { recursive: true });
      const pair = newKeyPair();
      key = pair.privateKey;
      // Self-signed: the authority names itself as its issuer.
      const name = `minimr cluster authority ${randomBytes(4).toString('hex')}`;
      cert = await makeCertificate(
        { commonName: name, publicKey: pair.publicKey, days: AUTHORITY_DAYS, authority: true, hosts: [] },
        name,
        await importPrivateKey(key),
      );
      await writePrivate(keyPath, key);
      await writeFile(certPath, cert, { mode: 0o644 });
    }
    try {
      return new ClusterAuthority(cert, await importPrivateKey(key));
    } catch (err) {
      throw new MinimrError(
        'EBADCONF',
        `the cluster authority in ${dir} (${AUTHORITY_CERT_FILE}, ${AUTHORITY_KEY_FILE}) cannot be read: ` +
          `${(err as Error).message}; move both away to make a new one (workers then need a new join token)`,
      );
    }
  }

  /** A certificate (PEM) for `publicKey` (SPKI PEM) naming `hosts` (addresses, DNS names), signed by this authority. */
  async issue(publicKey: string, hosts: readonly string[], commonName = hosts[0] ?? 'minimr'): Promise<string> {
    if (hosts.length === 0) throw new MinimrError('EBADCONF', 'a certificate names at least one host');
    try {
      await importPublicKey(publicKey);
    } catch {
      throw new MinimrError('EPROTOCOL', 'the public key to certify is not an ECDSA P-256 key in SPKI PEM');
    }
    return makeCertificate(
      { commonName, publicKey, days: LEAF_DAYS, authority: false, hosts },
      commonNameOf(this.x509),
      this.signingKey,
    );
  }

  /**
   * The JobTracker's own identity, kept in `dir` (tls-cert.pem, tls-key.pem): reused while it names
   * every one of `hosts` and has a month left, issued again otherwise. The certificate file holds the
   * chain (its certificate, then the authority's), so a newcomer finds the authority to pin in it.
   */
  async serverIdentity(dir: string, hosts: readonly string[]): Promise<TlsIdentity> {
    const certPath = join(dir, SERVER_CERT_FILE);
    const keyPath = join(dir, SERVER_KEY_FILE);
    const cert = await readIfExists(certPath);
    const key = await readIfExists(keyPath);
    if (cert !== undefined && key !== undefined && coversHosts(cert, hosts, this.x509)) {
      return { cert: Buffer.from(cert), key: Buffer.from(key) };
    }
    const pair = newKeyPair();
    const chain = `${await this.issue(pair.publicKey, hosts, `minimr JobTracker ${hostname()}`)}${this.certificate}`;
    await writePrivate(keyPath, pair.privateKey);
    await writeFile(certPath, chain, { mode: 0o644 });
    return { cert: Buffer.from(chain), key: Buffer.from(pair.privateKey) };
  }
}

/**
 * The names a server listening on `host` is reached by: that address, or, for a wildcard, every
 * address of this machine, with its host name and localhost.
 */
export function namesOfListenHost(host: string): string[] {
  const h = host.replace(/^\[|\]$/g, '');
  if (h !== '0.0.0.0' && h !== '::' && h !== '') return [h];
  const names = new Set<string>([hostname(), 'localhost']);
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (!a.address.startsWith('fe80:')) names.add(a.address);
  }
  return [...names];
}

/** The address a wildcard-listening server gives out as its own: its first non-internal IPv4 address. */
export function reachableAddress(host: string): string {
  if (host !== '0.0.0.0' && host !== '::') return host;
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return hostname();
}

function chainOf(leaf: PeerCertificate & { issuerCertificate?: PeerCertificate }): Buffer[] {
  const out: Buffer[] = [];
  let cert: (PeerCertificate & { issuerCertificate?: PeerCertificate }) | undefined = leaf;
  while (cert?.raw && out.length < 10) {
    out.push(cert.raw);
    const next: (PeerCertificate & { issuerCertificate?: PeerCertificate }) | undefined = cert.issuerCertificate;
    if (next === cert || next?.raw?.equals(cert.raw)) break;
    cert = next;
  }
  return out;
}

/** The error of a server whose chain does not hold the pinned authority. */
export function pinMismatch(where: string, pin: string, presented: readonly string[]): MinimrError {
  return new MinimrError(
    'EAUTH',
    `the certificate of ${where} does not match the pinned authority (join token's ca ${pin.slice(0, 16)}…; ` +
      `the server presented ${presented.map((f) => `${f.slice(0, 16)}…`).join(', ') || 'no certificate'}): ` +
      `it is not this cluster's server, or the token is from another cluster; nothing was sent to it`,
    { where, pin },
  );
}

/**
 * The authority (PEM) whose SHA-256 fingerprint is `pin`, taken from the chain the TLS server at
 * `host:port` presents; EAUTH when the chain does not hold it. Nothing is sent on this connection
 * but the TLS handshake: the caller then connects for real, trusting only what this returns.
 */
export async function fetchPinnedAuthority(
  host: string,
  port: number,
  pin: string,
  timeoutMs = 10_000,
): Promise<string> {
  const where = `${host}:${port}`;
  const chain = await new Promise<Buffer[]>((resolve, reject) => {
    const socket = tlsConnect({
      host,
      port,
      ...(isIP(host) === 0 ? { servername: host } : {}),
      // Trust is decided below, by the pin: this handshake only collects the chain.
      rejectUnauthorized: false,
    });
    const timer = setTimeout(() => socket.destroy(new Error(`no TLS handshake within ${timeoutMs} ms`)), timeoutMs);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      const leaf = socket.getPeerCertificate(true);
      socket.destroy();
      resolve(chainOf(leaf));
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(new MinimrError('ECONNECT', `cannot reach ${where} over TLS: ${err.message}. Is it running?`, { where }));
    });
  });
  const fingerprints = chain.map((der) => createHash('sha256').update(der).digest('hex'));
  const at = fingerprints.indexOf(pin.toLowerCase());
  if (at < 0) throw pinMismatch(where, pin, fingerprints);
  const pem = toPem(chain[at]!, 'CERTIFICATE');
  if (!new X509Certificate(pem).ca) throw pinMismatch(where, pin, fingerprints);
  return pem;
}

/** `host` and `port` of a ws:// or wss:// URL. */
export function endpointOfUrl(url: string): { host: string; port: number; tls: boolean } {
  const u = new URL(url);
  const tls = u.protocol === 'wss:' || u.protocol === 'https:';
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || (tls ? 443 : 80)), tls };
}

// ---- the authority of a JobTracker in this process, lent to its clients there ------------------

const inProcessAuthorities = new Map<string, string>();

/** Lets clients in this process that connect to `url` trust `authority` (a process is one trust domain). */
export function lendAuthorityInProcess(url: string, authority: string): void {
  inProcessAuthorities.set(url, authority);
}

export function withdrawAuthorityInProcess(url: string): void {
  inProcessAuthorities.delete(url);
}

/**
 * The authority (PEM) a client trusts for a wss:// `url`: with a pin, the one in the server's chain
 * whose fingerprint it is (a `given` one that matches the pin is used without asking); without,
 * the `given` one, else one a JobTracker in this process lends; undefined: the system's.
 */
export async function authorityToTrust(
  url: string,
  given: Buffer | undefined,
  pin: string | undefined,
  timeoutMs?: number,
): Promise<Buffer | undefined> {
  const endpoint = endpointOfUrl(url);
  if (!endpoint.tls) return given;
  if (pin === undefined) {
    const lent = inProcessAuthorities.get(url);
    return given ?? (lent !== undefined ? Buffer.from(lent) : undefined);
  }
  if (given !== undefined) {
    try {
      if (certificateFingerprint(given) === pin.toLowerCase()) return given;
    } catch {
      // not a certificate: ask the server
    }
  }
  return Buffer.from(await fetchPinnedAuthority(endpoint.host, endpoint.port, pin, timeoutMs));
}

/**
 * A node's TLS material (docs/security.md "TLS"), named by `startNode({ tls })` or the `--tls-*`
 * flags, read and checked once at start:
 *
 *   TlsOptions (paths or PEM text)  ─▶  resolveTls(options, nowMs)  ─▶  NodeTls { server?, client }
 *
 *   server  cert + key: the node serves HTTPS; with requireClientCert every client (peers and
 *           API clients alike) must present a certificate that chains to ca
 *   client  what forwards to https peers check them against (ca; the system store when absent)
 *           and present when a peer asks (clientCert + clientKey; default: cert + key)
 *
 * Every problem is BAD_CONFIG naming the option: a file that cannot be read, text that is not PEM,
 * a key that does not belong to its certificate, a certificate outside its validity, a CA bundle
 * without a certificate, half of a pair, requireClientCert without cert or ca, an unknown field.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import { BadConfig } from './errors.js';

/** A PEM file's path, or the PEM itself (bytes, or text starting with `-----BEGIN`). */
export type Pem = string | Uint8Array;

export interface TlsOptions {
  /** The node's certificate (chain, leaf first): with `key`, the node serves HTTPS. */
  cert?: Pem;
  /** The private key of `cert` (unencrypted PEM). */
  key?: Pem;
  /** CA certificates (a PEM bundle) peers' certificates must chain to; default: the system store. */
  ca?: Pem;
  /** The certificate forwards present to a peer that asks for one; default: `cert`. */
  clientCert?: Pem;
  /** The private key of `clientCert`; default: `key`. */
  clientKey?: Pem;
  /** Ask every client for a certificate and refuse one that does not chain to `ca` (mutual TLS). */
  requireClientCert?: boolean;
}

/** How each option is spelled in messages: the library's name and the flag. */
const NAMES: Readonly<Record<keyof TlsOptions, string>> = Object.freeze({
  cert: 'tls.cert (--tls-cert)',
  key: 'tls.key (--tls-key)',
  ca: 'tls.ca (--tls-ca)',
  clientCert: 'tls.clientCert (--tls-client-cert)',
  clientKey: 'tls.clientKey (--tls-client-key)',
  requireClientCert: 'tls.requireClientCert (--tls-require-client-cert)',
});

export interface ServerTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
  readonly requestCert: boolean;
  /** The node's own certificate, to check the advertised host against. */
  readonly leaf: X509Certificate;
}

export interface ClientTls {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

export interface NodeTls {
  /** Absent: the node serves plain HTTP. */
  readonly server: ServerTls | undefined;
  readonly client: ClientTls;
}

export function resolveTls(options: TlsOptions | undefined, nowMs: number): NodeTls {
  const o = options ?? {};
  for (const k of Object.keys(o))
    if (!Object.hasOwn(NAMES, k)) throw new BadConfig(`unknown TLS option tls.${k}; known: ${Object.keys(NAMES).join(', ')}`);
  pairOf(o, 'cert', 'key');
  pairOf(o, 'clientCert', 'clientKey');
  const requestCert = o.requireClientCert ?? false;
  if (typeof requestCert !== 'boolean') throw new BadConfig(`${NAMES.requireClientCert} must be true or false`);
  if (requestCert && o.cert === undefined)
    throw new BadConfig(`${NAMES.requireClientCert} needs ${NAMES.cert} and ${NAMES.key}: only a node serving HTTPS asks for certificates`);
  if (requestCert && o.ca === undefined)
    throw new BadConfig(`${NAMES.requireClientCert} needs ${NAMES.ca}: the CA client certificates must chain to`);
  const ca = o.ca === undefined ? undefined : caBundle(o.ca);
  const server = o.cert === undefined ? undefined : identity(o, 'cert', 'key', nowMs);
  const client = o.clientCert === undefined ? server : identity(o, 'clientCert', 'clientKey', nowMs);
  return Object.freeze({
    server: server && Object.freeze({ ...server, ca, requestCert }),
    client: Object.freeze({ ...(ca ? { ca } : {}), ...(client ? { cert: client.cert, key: client.key } : {}) }),
  });
}

/** Whether `cert` names `host` (a DNS name, or an IP address, bracketed or not) among its subject alt names. */
export function certNames(cert: X509Certificate, host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return (isIP(h) ? cert.checkIP(h) : cert.checkHost(h)) !== undefined;
}

function pairOf(o: TlsOptions, a: 'cert' | 'clientCert', b: 'key' | 'clientKey'): void {
  if ((o[a] === undefined) !== (o[b] === undefined))
    throw new BadConfig(`${NAMES[o[a] === undefined ? a : b]} is required with ${NAMES[o[a] === undefined ? b : a]}`);
}

/** A certificate chain and its key, checked to belong together and to be valid at `nowMs`. */
function identity(o: TlsOptions, certName: 'cert' | 'clientCert', keyName: 'key' | 'clientKey', nowMs: number) {
  const cert = pemOf(o[certName]!, certName);
  const key = pemOf(o[keyName]!, keyName);
  const leaf = certificates(cert, certName)[0]!;
  const from = Date.parse(leaf.validFrom);
  const to = Date.parse(leaf.validTo);
  if (nowMs < from || nowMs > to)
    throw new BadConfig(`${NAMES[certName]}: the certificate is valid from ${leaf.validFrom} to ${leaf.validTo}, not now`);
  context(NAMES[keyName], 'is not an unencrypted PEM private key', { key });
  context(NAMES[keyName], `does not belong to the certificate of ${NAMES[certName]}`, { cert, key });
  return { cert, key, leaf };
}

function caBundle(pem: Pem): Buffer {
  const ca = pemOf(pem, 'ca');
  certificates(ca, 'ca');
  return ca;
}

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Every certificate in a PEM text: at least one, each parsed. */
function certificates(pem: Buffer, name: keyof TlsOptions): X509Certificate[] {
  const blocks = pem.toString('utf8').match(CERT_BLOCK) ?? [];
  if (blocks.length === 0) throw new BadConfig(`${NAMES[name]} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((b) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      throw new BadConfig(`${NAMES[name]} holds a certificate that cannot be read: ${(e as Error).message}`, { cause: e });
    }
  });
}

function context(name: string, rule: string, parts: { cert?: Buffer; key: Buffer }): void {
  try {
    createSecureContext(parts);
  } catch (e) {
    throw new BadConfig(`${name} ${rule} (${(e as Error).message})`, { cause: e });
  }
}

function pemOf(value: Pem, name: keyof TlsOptions): Buffer {
  if (typeof value !== 'string') {
    if (value instanceof Uint8Array) return Buffer.from(value);
    throw new BadConfig(`${NAMES[name]} must be a file's path or PEM text`);
  }
  if (value.trimStart().startsWith('-----BEGIN')) return Buffer.from(value, 'utf8');
  try {
    return readFileSync(value);
  } catch (e) {
    throw new BadConfig(`cannot read ${NAMES[name]} file ${value}: ${(e as Error).message}`, { cause: e });
  }
}

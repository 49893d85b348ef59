/**
 * Certificates for TLS tests, made at test time with `openssl` (CI's Debian has it: ca-certificates
 * depends on it) into a temp folder — the same commands as docs/security.md's recipe:
 *
 *   const ca = makeCa(dir, 'ca')                      ─▶ { cert: <dir>/ca.pem, key: <dir>/ca.key }
 *   issue(dir, ca, 'node-1', 'IP:127.0.0.1')          ─▶ { cert: <dir>/node-1.pem, key: <dir>/node-1.key }
 *
 * EC P-256 keys: each takes milliseconds.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertFiles {
  cert: string;
  key: string;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

export function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A self-signed CA (10 years). */
export function makeCa(dir: string, name: string): CertFiles {
  const files = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  openssl(dir, ['req', '-x509', '-new', ...EC, '-days', '3650', '-subj', `/CN=${name}`, '-keyout', files.key, '-out', files.cert]);
  return files;
}

/** A certificate `ca` signs for `subjectAltName` (e.g. `IP:127.0.0.1,DNS:localhost`), for servers and clients. */
export function issue(dir: string, ca: CertFiles, name: string, subjectAltName: string): CertFiles {
  const files = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  openssl(dir, ['req', '-new', ...EC, '-subj', `/CN=${name}`, '-keyout', files.key, '-out', csr]);
  writeFileSync(ext, `subjectAltName = ${subjectAltName}\nextendedKeyUsage = serverAuth, clientAuth\n`);
  const signer = ['-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial'];
  openssl(dir, ['x509', '-req', '-in', csr, ...signer, '-days', '825', '-extfile', ext, '-out', files.cert]);
  return files;
}

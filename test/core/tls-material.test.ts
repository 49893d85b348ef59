/**
 * A node's TLS files are checked once, at start (src/core/tls-material.ts): each problem is
 * BAD_CONFIG naming the option (library name and flag); good files resolve to the server's and the
 * forwards' material, the client certificate defaulting to the node's own.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { certNames, resolveTls, type TlsOptions } from '../../src/core/tls-material.js';
import { issue, makeCa, type CertFiles } from '../helpers/tls-certs.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kw-tls-material-');

describe('resolveTls', () => {
  let dir: string;
  let ca: CertFiles;
  let node: CertFiles;
  let other: CertFiles;
  before(() => {
    dir = tempDir();
    ca = makeCa(dir, 'ca');
    node = issue(dir, ca, 'node', 'IP:127.0.0.1,DNS:node-1.internal');
    other = issue(dir, ca, 'other', 'IP:127.0.0.2');
  });

  const refused = (options: TlsOptions, pattern: RegExp, nowMs = Date.now()) =>
    assert.throws(
      () => resolveTls(options, nowMs),
      (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && pattern.test(e.message),
    );

  it('no options: plain HTTP, forwards trust the system store', () => {
    assert.deepEqual(resolveTls(undefined, Date.now()), { server: undefined, client: {} });
  });

  it('cert and key: serves TLS, and forwards present the same pair unless told otherwise', () => {
    const tls = resolveTls({ ...node, ca: ca.cert }, Date.now());
    assert.equal(tls.server?.cert.toString(), readFileSync(node.cert, 'utf8'));
    assert.equal(tls.server?.requestCert, false);
    assert.equal(tls.client.cert?.toString(), readFileSync(node.cert, 'utf8'));
    assert.equal(tls.client.ca?.toString(), readFileSync(ca.cert, 'utf8'));
    const own = resolveTls({ ...node, clientCert: other.cert, clientKey: other.key }, Date.now());
    assert.equal(own.client.cert?.toString(), readFileSync(other.cert, 'utf8'));
  });

  it('takes the PEM itself as well as a path', () => {
    const tls = resolveTls({ cert: readFileSync(node.cert, 'utf8'), key: readFileSync(node.key) }, Date.now());
    assert.ok(tls.server);
  });

  it('the certificate names its subject alt names only', () => {
    const { leaf } = resolveTls(node, Date.now()).server!;
    assert.equal(certNames(leaf, '127.0.0.1'), true);
    assert.equal(certNames(leaf, 'node-1.internal'), true);
    assert.equal(certNames(leaf, '127.0.0.2'), false);
    assert.equal(certNames(leaf, 'localhost'), false);
  });

  it('half a pair names the missing half', () => {
    refused({ cert: node.cert }, /tls\.key \(--tls-key\) is required with tls\.cert/);
    refused({ key: node.key }, /tls\.cert \(--tls-cert\) is required with tls\.key/);
    refused({ clientCert: node.cert }, /--tls-client-key\) is required/);
  });

  it('a file that cannot be read names the option and the path', () => {
    refused({ cert: join(dir, 'missing.pem'), key: node.key }, /cannot read tls\.cert \(--tls-cert\) file .*missing\.pem/);
    refused({ ca: join(dir, 'missing-ca.pem') }, /cannot read tls\.ca \(--tls-ca\)/);
  });

  it('not PEM: a certificate, a key, a CA bundle', () => {
    const junk = join(dir, 'junk.pem');
    writeFileSync(junk, 'not a certificate\n');
    refused({ cert: junk, key: node.key }, /tls\.cert \(--tls-cert\) holds no PEM certificate/);
    refused({ cert: node.key, key: node.key }, /tls\.cert \(--tls-cert\) holds no PEM certificate/);
    refused({ cert: node.cert, key: junk }, /tls\.key \(--tls-key\) is not an unencrypted PEM private key/);
    refused({ ca: junk }, /tls\.ca \(--tls-ca\) holds no PEM certificate/);
    refused({ ca: node.key }, /tls\.ca \(--tls-ca\) holds no PEM certificate/);
  });

  it('a key that belongs to another certificate', () => {
    refused({ cert: node.cert, key: other.key }, /tls\.key \(--tls-key\) does not belong to the certificate of tls\.cert/);
    refused({ ...node, clientCert: node.cert, clientKey: other.key }, /--tls-client-key\) does not belong/);
  });

  it('a certificate not valid now', () => {
    refused(node, /tls\.cert \(--tls-cert\): the certificate is valid from .* to .*, not now/, Date.parse('2100-01-01'));
  });

  it('requireClientCert needs a certificate to serve and a CA to check clients against', () => {
    refused({ requireClientCert: true, ca: ca.cert }, /--tls-require-client-cert\) needs tls\.cert/);
    refused({ ...node, requireClientCert: true }, /--tls-require-client-cert\) needs tls\.ca/);
    assert.equal(resolveTls({ ...node, ca: ca.cert, requireClientCert: true }, Date.now()).server?.requestCert, true);
  });

  it('an unknown field is refused', () => {
    refused({ ...node, certificate: node.cert } as TlsOptions, /unknown TLS option tls\.certificate/);
  });
});

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import {
  allows,
  authenticate,
  newToken,
  parseTokenFile,
  readTokenFile,
  seesTenant,
  sha256Hex,
  tokenSetOf,
  type TokenFile,
} from '../../src/core/tokens.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kw-tokens-');
const HASH_A = sha256Hex('kw_a');
const HASH_B = sha256Hex('kw_b');

const file = (tokens: unknown[]): unknown => ({ version: 1, tokens });
const entry = (over: Record<string, unknown> = {}) => ({ name: 'app', sha256: HASH_A, tenants: ['acme'], rights: ['call'], ...over });

function refused(value: unknown, pattern: RegExp): void {
  assert.throws(
    () => parseTokenFile(value),
    (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && pattern.test(e.message),
  );
}

describe('token file', () => {
  it('accepts a valid file and keeps each entry as written', () => {
    const value = file([entry(), entry({ name: 'ops', sha256: HASH_B, tenants: ['*'], rights: ['read', 'admin'] })]);
    assert.deepEqual(parseTokenFile(value), value);
  });

  it('refuses an unknown right, a bad hash, a duplicate name or hash, and malformed shapes, naming the rule', () => {
    refused(file([entry({ rights: ['call', 'write'] })]), /unknown right "write"/);
    refused(file([entry({ rights: [] })]), /rights must be a non-empty array/);
    refused(file([entry({ sha256: 'kw_plaintext-token' })]), /sha256 must be 64 lowercase hex/);
    refused(file([entry({ sha256: HASH_A.toUpperCase() })]), /sha256 must be 64 lowercase hex/);
    refused(file([entry(), entry({ sha256: HASH_B })]), /"app" appears twice/);
    refused(file([entry(), entry({ name: 'other' })]), /same sha256/);
    refused(file([entry({ tenants: ['Not A Tenant'] })]), /tenant/);
    refused(file([entry({ tenants: ['*', 'acme'] })]), /stands alone/);
    refused(file([entry({ tenants: [] })]), /non-empty array/);
    refused(file([entry({ name: '../x' })]), /name "..\/x" must match/);
    refused(file([entry({ token: 'kw_x' })]), /unknown field "token"/);
    refused({ version: 2, tokens: [] }, /version must be 1/);
    refused({ version: 1 }, /tokens must be an array/);
    refused([], /must be a JSON object/);
  });

  it('reads a file from disk, and a file that is not JSON or not there is BAD_CONFIG', () => {
    const dir = tempDir();
    const good = join(dir, 'tokens.json');
    writeFileSync(good, JSON.stringify(file([entry()])));
    assert.equal(readTokenFile(good).tokens[0]!.name, 'app');
    writeFileSync(join(dir, 'bad.json'), '{');
    assert.throws(() => readTokenFile(join(dir, 'bad.json')), /not JSON/);
    assert.throws(() => readTokenFile(join(dir, 'missing.json')), /cannot read the token file/);
  });
});

describe('authenticate and rights', () => {
  const set = tokenSetOf(file([entry(), entry({ name: 'ops', sha256: HASH_B, tenants: ['*'], rights: ['read'] })]) as TokenFile);

  it('finds the identity whose hash matches, and nothing for another token', () => {
    assert.equal(authenticate(set, 'kw_a')?.name, 'app');
    assert.equal(authenticate(set, 'kw_b')?.name, 'ops');
    assert.equal(authenticate(set, 'kw_c'), undefined);
    assert.equal(authenticate(set, HASH_A), undefined, 'the stored hash is not itself a token');
  });

  it('grants a right only on the listed tenants; admin everything; "*" every tenant', () => {
    const app = authenticate(set, 'kw_a')!;
    assert.equal(allows(app, 'call', 'acme'), true);
    assert.equal(allows(app, 'call', 'other'), false);
    assert.equal(allows(app, 'read'), false);
    const ops = authenticate(set, 'kw_b')!;
    assert.equal(allows(ops, 'call', 'acme'), false);
    assert.equal(seesTenant(ops, 'anything'), true);
    const admin = { name: 'root', tenants: ['acme'], rights: ['admin' as const] };
    assert.equal(allows(admin, 'call', 'other'), true);
    assert.equal(allows(admin, 'read'), true);
  });

  it('makes tokens with the kw_ prefix and 32 random bytes', () => {
    const t = newToken();
    assert.match(t, /^kw_[A-Za-z0-9_-]{43}$/);
    assert.notEqual(newToken(), t);
  });
});

/**
 * `keepwork token add|list|remove` as a process: the token is printed once and only its SHA-256
 * is stored, the file is mode 0600, list shows no hashes, and bad input leaves the file as it was.
 * Also `keepwork start --host 0.0.0.0` without --auth-file is refused.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { authenticate, readTokenFile, sha256Hex, tokenSetOf } from '../../src/core/tokens.js';
import { tempDirs } from '../helpers/temp.js';

const CLI = ['--import', 'tsx', 'src/cli/cli.ts'];
const tempDir = tempDirs('kw-token-cli-');
const run = (...args: string[]) => spawnSync(process.execPath, [...CLI, ...args], { encoding: 'utf8' });

describe('keepwork token', () => {
  it('adds a token: printed once on stdout, its hash stored, the file mode 0600', () => {
    const dir = tempDir();
    const file = join(dir, 'tokens.json');
    const r = run('token', 'add', 'billing-app', '--tenants', 'billing,shop', '--rights', 'call,read', '--file', file);
    assert.equal(r.status, 0, r.stderr);
    const token = r.stdout.trim();
    assert.match(token, /^kw_[A-Za-z0-9_-]{43}$/);
    assert.equal(r.stdout, `${token}\n`, 'stdout holds the token and nothing else');
    assert.ok(!r.stderr.includes(token), 'the token is printed once');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const text = readFileSync(file, 'utf8');
    assert.ok(!text.includes(token), 'the file never holds the token');
    assert.deepEqual(readTokenFile(file).tokens, [
      { name: 'billing-app', sha256: sha256Hex(token), tenants: ['billing', 'shop'], rights: ['call', 'read'] },
    ]);
    assert.equal(authenticate(tokenSetOf(file), token)?.name, 'billing-app');
    assert.deepEqual(readdirSync(dir), ['tokens.json'], 'no temp file left');

    const second = run('token', 'add', 'ops', '--tenants', '*', '--rights', 'admin', '--file', file);
    assert.equal(second.status, 0, second.stderr);
    assert.notEqual(second.stdout.trim(), token);
    assert.deepEqual(
      readTokenFile(file).tokens.map((t) => t.name),
      ['billing-app', 'ops'],
    );
  });

  it('lists names, tenants and rights, never hashes', () => {
    const file = join(tempDir(), 'tokens.json');
    assert.equal(run('token', 'add', 'app', '--tenants', 'acme', '--rights', 'call', '--file', file).status, 0);
    const r = run('token', 'list', '--file', file, '--json');
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [{ name: 'app', tenants: ['acme'], rights: ['call'] }]);
    const table = run('token', 'list', '--file', file);
    assert.match(table.stdout, /app\s+acme\s+call/);
    assert.ok(!table.stdout.includes(readTokenFile(file).tokens[0]!.sha256));
  });

  it('removes a token by name', () => {
    const file = join(tempDir(), 'tokens.json');
    run('token', 'add', 'a', '--tenants', 'acme', '--rights', 'call', '--file', file);
    run('token', 'add', 'b', '--tenants', 'acme', '--rights', 'read', '--file', file);
    const r = run('token', 'remove', 'a', '--file', file);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(
      readTokenFile(file).tokens.map((t) => t.name),
      ['b'],
    );
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  it('changes nothing on bad input', () => {
    const dir = tempDir();
    const file = join(dir, 'tokens.json');
    assert.equal(run('token', 'add', 'app', '--tenants', 'acme', '--rights', 'call', '--file', file).status, 0);
    const before = readFileSync(file);
    const bad = [
      ['token', 'add', 'x', '--tenants', 'acme', '--rights', 'call,write', '--file', file],
      ['token', 'add', 'x', '--tenants', 'Not A Tenant', '--rights', 'call', '--file', file],
      ['token', 'add', '../x', '--tenants', 'acme', '--rights', 'call', '--file', file],
      ['token', 'add', 'app', '--tenants', 'acme', '--rights', 'call', '--file', file],
      ['token', 'add', 'x', '--tenants', 'acme', '--file', file],
      ['token', 'remove', 'nobody', '--file', file],
    ];
    for (const args of bad) {
      const r = run(...args);
      assert.notEqual(r.status, 0, args.join(' '));
      assert.equal(r.stdout, '', `${args.join(' ')} prints no token`);
    }
    assert.deepEqual(readFileSync(file), before);
    assert.deepEqual(readdirSync(dir), ['tokens.json']);
    const fresh = join(dir, 'new.json');
    assert.notEqual(run('token', 'add', 'x', '--tenants', 'acme', '--rights', 'bogus', '--file', fresh).status, 0);
    assert.equal(existsSync(fresh), false, 'a refused add creates no file');
  });
});

describe('keepwork start on a non-loopback host', () => {
  it('refuses to start without --auth-file, naming the way out', () => {
    const data = join(tempDir(), 'data');
    const r = run('start', '--port', '0', '--host', '0.0.0.0', '--data', data);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /BAD_CONFIG: host 0\.0\.0\.0 is not loopback.*--insecure-no-auth/);
    assert.equal(existsSync(data), false);
  });
});

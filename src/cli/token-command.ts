/**
 * `keepwork token add|list|remove`: edits a token file (core/tokens.ts, docs/security.md).
 *
 *   add NAME --tenants a,b --rights call,read   a new random token; the file keeps its SHA-256 and
 *                                               the token is printed once, on stdout
 *   list                                        names, tenants and rights (never hashes)
 *   remove NAME
 *
 * The file is read and validated first and every input checked before anything is written, so
 * bad input changes nothing; a write goes to a temp file (mode 0600) in the same folder, fsynced,
 * then renamed over the file.
 */
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { BadRequest } from '../core/errors.js';
import {
  TOKEN_FILE_VERSION,
  checkName,
  checkRights,
  checkTenants,
  newToken,
  readTokenFile,
  sha256Hex,
  type TokenEntry,
  type TokenFile,
} from '../core/tokens.js';

function load(path: string): TokenFile {
  return existsSync(path) ? readTokenFile(path) : { version: TOKEN_FILE_VERSION, tokens: [] };
}

function save(path: string, file: TokenFile): void {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(file, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temp, path);
  } catch (e) {
    rmSync(temp, { force: true });
    throw e;
  }
}

export function tokenAddCommand(name: string, o: { file: string; tenants?: string[]; rights?: string[] }): void {
  const file = load(o.file);
  const entry: TokenEntry = {
    name: checkName(name, 'token add'),
    sha256: '',
    tenants: checkTenants(o.tenants ?? [], 'token add --tenants'),
    rights: checkRights(o.rights ?? [], 'token add --rights'),
  };
  if (file.tokens.some((t) => t.name === name))
    throw new BadRequest(`${o.file} already has a token named ${JSON.stringify(name)}; remove it first to replace it`);
  const token = newToken();
  entry.sha256 = sha256Hex(token);
  save(o.file, { version: TOKEN_FILE_VERSION, tokens: [...file.tokens, entry] });
  console.error(
    `added ${name} to ${o.file} (tenants ${entry.tenants.join(',')}; rights ${entry.rights.join(',')}); the token, shown once:`,
  );
  console.log(token);
}

export function tokenListCommand(o: { file: string; json?: boolean }): void {
  const rows = readTokenFile(o.file).tokens.map((t) => ({ name: t.name, tenants: t.tenants, rights: t.rights }));
  if (o.json) return void console.log(JSON.stringify(rows));
  const width = Math.max(4, ...rows.map((r) => r.name.length));
  console.log(`${'NAME'.padEnd(width)}  TENANTS  RIGHTS`);
  for (const r of rows) console.log(`${r.name.padEnd(width)}  ${r.tenants.join(',')}  ${r.rights.join(',')}`);
}

export function tokenRemoveCommand(name: string, o: { file: string }): void {
  const file = readTokenFile(o.file);
  if (!file.tokens.some((t) => t.name === name)) throw new BadRequest(`${o.file} has no token named ${JSON.stringify(name)}`);
  save(o.file, { version: TOKEN_FILE_VERSION, tokens: file.tokens.filter((t) => t.name !== name) });
  console.error(`removed ${name} from ${o.file}`);
}

/**
 * Bearer tokens and their rights (docs/security.md). A token file holds one entry per identity,
 * never the token itself, only its SHA-256:
 *
 *   { "version": 1,
 *     "tokens": [ { "name": "billing-app", "sha256": "<64 hex>", "tenants": ["billing"], "rights": ["call"] } ] }
 *
 *   tenants  tenant names, or ["*"] for every tenant
 *   rights   call   actor calls and GET …/alarm on its tenants
 *            read   the status page, /v1/status (its tenants' rows only) and, with tenants ["*"], /metrics
 *            admin  everything, on every tenant
 *
 * `parseTokenFile` validates strictly (BAD_CONFIG naming the entry and the rule); `authenticate`
 * hashes a presented token and compares it with every entry's hash in constant time, so neither
 * the answer's timing nor an early exit tells which entry (if any) came close.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { validateTenant } from './address.js';
import { BadConfig } from './errors.js';

export const RIGHTS = ['call', 'read', 'admin'] as const;
export type Right = (typeof RIGHTS)[number];
/** What a new token starts with, so a leaked one is recognisable (secret scanners, logs). */
export const TOKEN_PREFIX = 'kw_';
export const TOKEN_FILE_VERSION = 1;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const HASH_RE = /^[0-9a-f]{64}$/;
const ENTRY_KEYS = new Set(['name', 'sha256', 'tenants', 'rights']);

/** One entry as the file holds it. */
export interface TokenEntry {
  name: string;
  sha256: string;
  tenants: string[];
  rights: Right[];
}

export interface TokenFile {
  version: number;
  tokens: TokenEntry[];
}

/** A verified caller: the entry's name, tenants and rights. */
export interface Identity {
  readonly name: string;
  readonly tenants: readonly string[];
  readonly rights: readonly Right[];
}

/** The parsed, checked token file a node authenticates against. */
export interface TokenSet {
  readonly identities: readonly Identity[];
  /** Each entry's hash as bytes, in the order of `identities`. */
  readonly hashes: readonly Buffer[];
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A new random token: the prefix and 32 random bytes, base64url. */
export function newToken(bytes: (n: number) => Buffer = randomBytes): string {
  return TOKEN_PREFIX + bytes(32).toString('base64url');
}

/** Reads and validates a token file (`--auth-file`); a missing or unreadable file is BAD_CONFIG. */
export function readTokenFile(path: string): TokenFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new BadConfig(`cannot read the token file ${path}: ${(e as Error).message}`, { cause: e });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new BadConfig(`the token file ${path} is not JSON: ${(e as Error).message}`, { cause: e });
  }
  return parseTokenFile(value, path);
}

/** Checks a token file's value; `where` names it in messages. */
export function parseTokenFile(value: unknown, where = 'the token file'): TokenFile {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BadConfig(`${where} must be a JSON object`);
  const o = value as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (k !== 'version' && k !== 'tokens') throw new BadConfig(`${where}: unknown field ${JSON.stringify(k)} (fields: version, tokens)`);
  if (o.version !== TOKEN_FILE_VERSION)
    throw new BadConfig(`${where}: version must be ${TOKEN_FILE_VERSION}, got ${JSON.stringify(o.version)}`);
  if (!Array.isArray(o.tokens)) throw new BadConfig(`${where}: tokens must be an array`);
  const names = new Set<string>();
  const hashes = new Set<string>();
  const tokens = o.tokens.map((raw: unknown, i) => {
    const entry = parseEntry(raw, `${where}: tokens[${i}]`);
    if (names.has(entry.name)) throw new BadConfig(`${where}: the name ${JSON.stringify(entry.name)} appears twice`);
    if (hashes.has(entry.sha256)) throw new BadConfig(`${where}: ${JSON.stringify(entry.name)} has the same sha256 as another entry`);
    names.add(entry.name);
    hashes.add(entry.sha256);
    return entry;
  });
  return { version: TOKEN_FILE_VERSION, tokens };
}

function parseEntry(raw: unknown, where: string): TokenEntry {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new BadConfig(`${where} must be an object`);
  const e = raw as Record<string, unknown>;
  for (const k of Object.keys(e))
    if (!ENTRY_KEYS.has(k)) throw new BadConfig(`${where}: unknown field ${JSON.stringify(k)} (fields: ${[...ENTRY_KEYS].join(', ')})`);
  const name = checkName(e.name, where);
  if (typeof e.sha256 !== 'string' || !HASH_RE.test(e.sha256))
    throw new BadConfig(`${where} (${name}): sha256 must be 64 lowercase hex digits, the SHA-256 of the token (never the token)`);
  return {
    name,
    sha256: e.sha256,
    tenants: checkTenants(e.tenants, `${where} (${name})`),
    rights: checkRights(e.rights, `${where} (${name})`),
  };
}

export function checkName(name: unknown, where = 'name'): string {
  if (typeof name !== 'string' || !NAME_RE.test(name))
    throw new BadConfig(`${where}: name ${JSON.stringify(name)} must match ${NAME_RE.source}`);
  return name;
}

export function checkTenants(tenants: unknown, where = 'tenants'): string[] {
  if (!Array.isArray(tenants) || tenants.length === 0) throw new BadConfig(`${where}: tenants must be a non-empty array (["*"] for all)`);
  if (tenants.includes('*') && tenants.length > 1) throw new BadConfig(`${where}: "*" (every tenant) stands alone`);
  if (new Set(tenants).size !== tenants.length) throw new BadConfig(`${where}: a tenant is listed twice`);
  return tenants.map((t: unknown) => {
    if (t === '*') return t;
    try {
      return validateTenant(t);
    } catch (e) {
      throw new BadConfig(`${where}: ${(e as Error).message}`, { cause: e });
    }
  });
}

export function checkRights(rights: unknown, where = 'rights'): Right[] {
  if (!Array.isArray(rights) || rights.length === 0)
    throw new BadConfig(`${where}: rights must be a non-empty array of ${RIGHTS.join(', ')}`);
  if (new Set(rights).size !== rights.length) throw new BadConfig(`${where}: a right is listed twice`);
  for (const r of rights)
    if (!(RIGHTS as readonly unknown[]).includes(r))
      throw new BadConfig(`${where}: unknown right ${JSON.stringify(r)} (rights: ${RIGHTS.join(', ')})`);
  return rights as Right[];
}

/** `startNode({ auth })`: a path to a token file, or its value; validated either way. */
export function tokenSetOf(auth: string | TokenFile): TokenSet {
  const file = typeof auth === 'string' ? readTokenFile(auth) : parseTokenFile(auth, 'auth');
  return Object.freeze({
    identities: file.tokens.map((t) =>
      Object.freeze({ name: t.name, tenants: Object.freeze([...t.tenants]), rights: Object.freeze([...t.rights]) }),
    ),
    hashes: file.tokens.map((t) => Buffer.from(t.sha256, 'hex')),
  });
}

/**
 * The identity whose hash matches `token`'s, or undefined. Every entry is compared (timingSafeEqual
 * on equal-length digests), whatever matched earlier.
 */
export function authenticate(set: TokenSet, token: string): Identity | undefined {
  const digest = createHash('sha256').update(token, 'utf8').digest();
  let found: Identity | undefined;
  for (let i = 0; i < set.hashes.length; i++) {
    const equal = timingSafeEqual(digest, set.hashes[i]!);
    if (equal && found === undefined) found = set.identities[i];
  }
  return found;
}

export function identityByName(set: TokenSet, name: string): Identity | undefined {
  return set.identities.find((i) => i.name === name);
}

/** Whether `who` may use `right` on `tenant` (admin: everything; tenant undefined: any of its tenants). */
export function allows(who: Identity, right: Right, tenant?: string): boolean {
  if (who.rights.includes('admin')) return true;
  if (!who.rights.includes(right)) return false;
  return tenant === undefined || seesTenant(who, tenant);
}

/** Whether `who` sees `tenant`'s rows (admin and "*" see every tenant). */
export function seesTenant(who: Identity, tenant: string): boolean {
  return who.rights.includes('admin') || who.tenants.includes('*') || who.tenants.includes(tenant);
}

/** Whether `who` sees every tenant (admin, or tenants ["*"]). */
export function seesAllTenants(who: Identity): boolean {
  return who.rights.includes('admin') || who.tenants.includes('*');
}

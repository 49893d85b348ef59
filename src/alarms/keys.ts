/**
 * Keys of the alarm index in the bucket (docs/alarm-index.md "The key format") — the only module that builds
 * or parses them, and the `alarm_indexed` value that names one:
 *
 *   tagged  alarms/<tenant>/<due ms, 15 digits>/<class>.t/<name hex>/<generation, 20 digits>-<nonce hex>
 *           alarms/acme/001800000060000/Reminder.t/7231/00000000000000000003-9f1c2b7a00000001
 *   legacy  alarms/<tenant>/<due ms, 15 digits>/<class>/<name hex>
 *           alarms/acme/001800000060000/Reminder/7231
 *
 *   alarm_indexed  "<at>/<generation>-<nonce>" (tagged) · "<at>" (legacy) · "" (none)
 *
 * Due time first and zero-padded, so a listing yields the earliest alarms first; the name as hex,
 * so nothing is escaped by any store; tagged entries in the sibling folder `<class>.t` (class names
 * have no '.'), so no key is both an object and the folder of others. Every PUT uses a fresh tag
 * (R1): the nonce comes from the injected Random plus a per-source counter, never reused.
 */
import { nameFromHex, nameHex, parseAddress, type ActorAddress } from '../core/address.js';
import { BadRequest, CorruptState } from '../core/errors.js';
import { randomHex, type Random } from '../core/random.js';

const DUE_DIGITS = 15;
export const DUE_MAX_MS = 10 ** DUE_DIGITS - 1;
const GEN_DIGITS = 20;

export interface EntryTag {
  generation: number;
  nonce: string;
}

export interface IndexEntry {
  address: ActorAddress;
  dueMs: number;
  /** null: a legacy (untagged) entry. */
  tag: EntryTag | null;
}

/** What `alarm_indexed` says: the entry the actor's state names for its alarm. */
export interface Indexed {
  at: number;
  tag: EntryTag | null;
}

const pad = (n: number, digits: number) => String(n).padStart(digits, '0');

function checkDue(dueMs: number): number {
  if (!Number.isSafeInteger(dueMs) || dueMs < 0 || dueMs > DUE_MAX_MS)
    throw new BadRequest(`alarm time ${dueMs} is outside 0..${DUE_MAX_MS} (the index's ${DUE_DIGITS} digits)`);
  return dueMs;
}

/** Every index entry's key starts with this. */
export const INDEX_PREFIX = 'alarms/';

export function tenantPrefix(tenant: string): string {
  return `${INDEX_PREFIX}${tenant}/`;
}

/** The tenant of any key under `INDEX_PREFIX`, or undefined for anything else. */
export function tenantOfKey(key: string): string | undefined {
  if (!key.startsWith(INDEX_PREFIX)) return undefined;
  const tenant = key.slice(INDEX_PREFIX.length).split('/', 1)[0];
  return tenant || undefined;
}

/** A key that sorts after every key of the tenant's index (to list past it). */
export function afterTenant(tenant: string): string {
  return `${tenantPrefix(tenant)}\u{10ffff}`;
}

/** Every key of an entry due at or before `dueMs` sorts before this bound (for the sweep's listing). */
export function dueBound(tenant: string, dueMs: number): string {
  return tenantPrefix(tenant) + pad(checkDue(dueMs) + 1, DUE_DIGITS);
}

function formatTag(tag: EntryTag): string {
  return `${pad(tag.generation, GEN_DIGITS)}-${tag.nonce}`;
}

function parseTag(s: string): EntryTag | undefined {
  const m = /^(\d{20})-([0-9a-f]{1,64})$/.exec(s);
  if (!m) return undefined;
  const generation = Number(m[1]);
  return Number.isSafeInteger(generation) ? { generation, nonce: m[2]! } : undefined;
}

export function entryKey(e: IndexEntry): string {
  const { tenant, className, name } = e.address;
  const head = `${tenantPrefix(tenant)}${pad(checkDue(e.dueMs), DUE_DIGITS)}/`;
  return e.tag ? `${head}${className}.t/${nameHex(name)}/${formatTag(e.tag)}` : `${head}${className}/${nameHex(name)}`;
}

/** The folder of one actor's tagged entries at one time (the sweep's per-actor LIST). */
export function actorEntriesPrefix(a: ActorAddress, dueMs: number): string {
  return `${tenantPrefix(a.tenant)}${pad(checkDue(dueMs), DUE_DIGITS)}/${a.className}.t/${nameHex(a.name)}/`;
}

export function parseEntryKey(key: string): IndexEntry | undefined {
  const m = /^alarms\/([^/]+)\/(\d{15})\/([^/]+)\/((?:[0-9a-f]{2})+)(?:\/([^/]+))?$/.exec(key);
  if (!m) return undefined;
  const [, tenant, due, folder, hex, tagText] = m;
  const tagged = folder!.endsWith('.t');
  if (tagged !== (tagText !== undefined)) return undefined;
  const tag = tagText === undefined ? null : parseTag(tagText);
  if (tag === undefined) return undefined;
  try {
    const address = parseAddress({ tenant, className: tagged ? folder!.slice(0, -2) : folder, name: nameFromHex(hex!) });
    return { address, dueMs: Number(due), tag };
  } catch {
    return undefined;
  }
}

export function formatIndexed(i: Indexed | null): string {
  if (!i) return '';
  return i.tag ? `${i.at}/${formatTag(i.tag)}` : String(i.at);
}

/** Parses `alarm_indexed`; null for none (empty or absent). A value it cannot read throws `CorruptState`. */
export function parseIndexed(value: string | null): Indexed | null {
  if (value === null || value === '') return null;
  const m = /^(\d{1,15})(?:\/(.+))?$/.exec(value);
  const tag = m?.[2] === undefined ? null : parseTag(m[2]);
  if (!m || tag === undefined)
    throw new CorruptState(`alarm_indexed holds ${JSON.stringify(value)}, which is not <at>[/<generation>-<nonce>]`);
  return { at: Number(m[1]), tag };
}

/** Fresh nonces: random bits from the injected Random plus a counter, so one source never repeats. */
export class NonceSource {
  private readonly prefix: string;
  private counter = 0;

  constructor(random: Random) {
    this.prefix = randomHex(random, 6);
  }

  next(): string {
    return this.prefix + (this.counter++).toString(16).padStart(8, '0');
  }
}

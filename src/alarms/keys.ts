/**
 * Keys of the alarm index in the bucket (docs/alarm-index.md "The key format") — the only module that builds
 * or parses them, and the `alarm_indexed` value that names one:
 *
 *   tagged  alarms/<tenant>/<due ms, 15 digits>/<class>.t/<name hex>/<generation, 20 digits>-<nonce hex>
 *           alarms/acme/001800000060000/Reminder.t/7231/00000000000000000003-9f1c2b7a00000001
 *   sharded alarms/<tenant>/-<shard, 3 hex>/<due ms, 15 digits>/<class>.t/<name hex>/<generation>-<nonce hex>
 *           alarms/acme/-0a3/001800000060000/Reminder.t/7231/00000000000000000003-9f1c2b7a00000001
 *   legacy  alarms/<tenant>/<due ms, 15 digits>/<class>/<name hex>
 *           alarms/acme/001800000060000/Reminder/7231
 *
 *   alarm_indexed  "<at>/<generation>-<nonce>" (tagged) · "<at>/-<shard>/<generation>-<nonce>"
 *                  (sharded) · "<at>" (legacy) · "" (none)
 *
 * The sharded layout (`indexShards` > 1) puts the actor's shard after the tenant: its address's
 * hash32 (shard.ts) masked to the shard count, as three lowercase hex digits (SHARDS_MAX is 4096,
 * so every shard count writes the same width, and an actor's shard under 2^k shards is the low k
 * bits of one hash). The leading '-' sorts before every digit, so a tenant's sharded entries all
 * come before its unsharded ones: a listing from the tenant's start sees at once whether any exist,
 * and one jump (`afterShardedArea`) steps past them. Legacy entries are never sharded. Neither
 * layout's keys parse as the other's: a shard segment is never 15 digits.
 *
 * Due time first and zero-padded, so a listing yields the earliest alarms first; the name as hex,
 * so nothing is escaped by any store; tagged entries in the sibling folder `<class>.t` (class names
 * have no '.'), so no key is both an object and the folder of others. Every PUT uses a fresh tag
 * (R1): the nonce comes from the injected Random plus a per-source counter, never reused.
 */
import { nameFromHex, nameHex, parseAddress, type ActorAddress } from '../core/address.js';
import { SHARDS_MAX } from '../core/config.js';
import { BadRequest, CorruptState } from '../core/errors.js';
import { invariant } from '../core/invariant.js';
import { randomHex, type Random } from '../core/random.js';
import { hash32 } from './shard.js';

const DUE_DIGITS = 15;
export const DUE_MAX_MS = 10 ** DUE_DIGITS - 1;
const GEN_DIGITS = 20;
const SHARD_DIGITS = 3;
const SHARD_MARK = '-';

export interface EntryTag {
  generation: number;
  nonce: string;
}

export interface IndexEntry {
  address: ActorAddress;
  dueMs: number;
  /** null: a legacy (untagged) entry. */
  tag: EntryTag | null;
  /** The shard folder of a sharded entry; absent: the unsharded layout. */
  shard?: number;
}

/** What `alarm_indexed` says: the entry the actor's state names for its alarm. */
export interface Indexed {
  at: number;
  tag: EntryTag | null;
  /** The shard folder of the entry named; absent: the unsharded layout. */
  shard?: number;
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

/**
 * Every key of an entry due at or before `dueMs` sorts before this bound (for the sweep's listing):
 * within the unsharded layout, or within one shard's folder.
 */
export function dueBound(tenant: string, dueMs: number, shard?: number): string {
  return layoutPrefix(tenant, shard) + pad(checkDue(dueMs) + 1, DUE_DIGITS);
}

/** The shard of an actor under `shards` (a power of two), or undefined for one shard (the unsharded layout). */
export function shardOf(a: ActorAddress, shards: number): number | undefined {
  return shards > 1 ? hash32(a.key) & (shards - 1) : undefined;
}

/**
 * Every shard folder the actor's tagged entries can be in, under any shard count (2 … SHARDS_MAX):
 * the low k bits of one hash, so at most log2(SHARDS_MAX) folders (fewer when they coincide).
 */
export function shardsOfActor(a: ActorAddress): number[] {
  const shards = new Set<number>();
  for (let count = 2; count <= SHARDS_MAX; count *= 2) shards.add(shardOf(a, count)!);
  return [...shards];
}

function shardSegment(shard: number): string {
  invariant(Number.isInteger(shard) && shard >= 0 && shard < SHARDS_MAX, () => `shard ${shard} is outside 0..${SHARDS_MAX - 1}`);
  return SHARD_MARK + shard.toString(16).padStart(SHARD_DIGITS, '0');
}

/** The folder of one shard of a tenant's index (a sharded walk lists it). */
export function shardPrefix(tenant: string, shard: number): string {
  return `${tenantPrefix(tenant)}${shardSegment(shard)}/`;
}

function layoutPrefix(tenant: string, shard: number | undefined): string {
  return shard === undefined ? tenantPrefix(tenant) : shardPrefix(tenant, shard);
}

/** Every sharded key of a tenant starts with this (and no unsharded one does). */
export function shardedAreaPrefix(tenant: string): string {
  return tenantPrefix(tenant) + SHARD_MARK;
}

/** A key that sorts after every sharded key of the tenant and before every unsharded one. */
export function afterShardedArea(tenant: string): string {
  return `${shardedAreaPrefix(tenant)}\u{10ffff}`;
}

/** A key that sorts after every key of one shard's folder. */
export function afterShard(tenant: string, shard: number): string {
  return `${shardPrefix(tenant, shard)}\u{10ffff}`;
}

/** The shard folder a key of the tenant's sharded area is in (undefined: not a sharded key of the tenant). */
export function shardOfKey(tenant: string, key: string): number | undefined {
  const area = shardedAreaPrefix(tenant);
  if (!key.startsWith(area)) return undefined;
  const m = /^([0-9a-f]{3})\//.exec(key.slice(area.length));
  return m ? parseInt(m[1]!, 16) : undefined;
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
  invariant(e.shard === undefined || e.tag !== null, () => `a legacy entry of ${e.address.key} cannot be sharded`);
  const head = `${layoutPrefix(tenant, e.shard)}${pad(checkDue(e.dueMs), DUE_DIGITS)}/`;
  return e.tag ? `${head}${className}.t/${nameHex(name)}/${formatTag(e.tag)}` : `${head}${className}/${nameHex(name)}`;
}

/** The folder of one actor's tagged entries at one time, unsharded or in one shard (the per-actor LIST of stale removal). */
export function actorEntriesPrefix(a: ActorAddress, dueMs: number, shard?: number): string {
  return `${layoutPrefix(a.tenant, shard)}${pad(checkDue(dueMs), DUE_DIGITS)}/${a.className}.t/${nameHex(a.name)}/`;
}

export function parseEntryKey(key: string): IndexEntry | undefined {
  const m = /^alarms\/([^/]+)\/(?:-([0-9a-f]{3})\/)?(\d{15})\/([^/]+)\/((?:[0-9a-f]{2})+)(?:\/([^/]+))?$/.exec(key);
  if (!m) return undefined;
  const [, tenant, shardHex, due, folder, hex, tagText] = m;
  const tagged = folder!.endsWith('.t');
  if (tagged !== (tagText !== undefined)) return undefined;
  const tag = tagText === undefined ? null : parseTag(tagText);
  if (tag === undefined || (shardHex !== undefined && tag === null)) return undefined;
  try {
    const address = parseAddress({ tenant, className: tagged ? folder!.slice(0, -2) : folder, name: nameFromHex(hex!) });
    const e: IndexEntry = { address, dueMs: Number(due), tag };
    if (shardHex !== undefined) e.shard = parseInt(shardHex, 16);
    return e;
  } catch {
    return undefined;
  }
}

/** What `alarm_indexed` says for an entry (the entry's due time, tag and shard). */
export function indexedOf(e: IndexEntry): Indexed {
  return e.shard === undefined ? { at: e.dueMs, tag: e.tag } : { at: e.dueMs, tag: e.tag, shard: e.shard };
}

export function formatIndexed(i: Indexed | null): string {
  if (!i) return '';
  if (!i.tag) return String(i.at);
  return i.shard === undefined ? `${i.at}/${formatTag(i.tag)}` : `${i.at}/${shardSegment(i.shard)}/${formatTag(i.tag)}`;
}

/** Parses `alarm_indexed`; null for none (empty or absent). A value it cannot read throws `CorruptState`. */
export function parseIndexed(value: string | null): Indexed | null {
  if (value === null || value === '') return null;
  const m = /^(\d{1,15})(?:\/(?:-([0-9a-f]{3})\/)?(.+))?$/.exec(value);
  const tag = m?.[3] === undefined ? null : parseTag(m[3]);
  if (!m || tag === undefined || (m[2] !== undefined && tag === null))
    throw new CorruptState(`alarm_indexed holds ${JSON.stringify(value)}, which is not <at>[/[-<shard>/]<generation>-<nonce>]`);
  return m[2] === undefined ? { at: Number(m[1]), tag } : { at: Number(m[1]), tag, shard: parseInt(m[2], 16) };
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

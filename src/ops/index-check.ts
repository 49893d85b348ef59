/**
 * `index check`'s walk over the bucket (docs/alarm-index.md): every actor with a chain, then every index
 * entry, streamed to `onFinding` so memory stays bounded (a page of keys and an LRU of actors).
 *
 *   pass 1  state/…  ─▶ per actor: restore the head (read-only) ─▶ committed alarm? ─▶ HEAD its
 *           named entry (and, when that is missing, LIST its time's folder in every layout: the
 *           unsharded one and each shard folder the actor can be in) ─▶ ActorKind
 *   pass 2  alarms/… ─▶ per entry: its actor's head (cached) ─▶ EntryKind; and is the class served?
 *
 * A problem found in pass 1 is confirmed before it is reported: the chain is listed again and, if
 * its head moved meanwhile, the actor is read and judged again (a live owner changes alarms while
 * we look). With `repair`, a confirmed `missing` / `unindexed` alarm gets a fresh entry at its
 * time (`repairEntry`); nothing is ever deleted and no chain is written.
 */
import type { ActorAddress } from '../core/address.js';
import { isLive } from '../leases/decisions.js';
import { NODES_PREFIX, decodeNode, type NodeRecord } from '../leases/records.js';
import { actorEntriesPrefix, entryKey, parseEntryKey, shardsOfActor, tenantPrefix, type NonceSource } from '../alarms/keys.js';
import { keyOf } from '../alarms/owner.js';
import { listChain } from '../replication/chain.js';
import { parseLinkKey, statePrefix } from '../replication/state-keys.js';
import { listAll } from '../store/keys.js';
import type { ObjectStore } from '../store/types.js';
import { CommittedCache } from './actor-cache.js';
import { indexTenants } from '../alarms/index-listing.js';
import type { CommittedActor } from './committed-state.js';
import { ACTOR_PROBLEMS, actorFinding, entryFinding, type ActorKind, type EntryKind } from './index-findings.js';

export type Finding =
  | { type: 'actor'; kind: ActorKind; actor: CommittedActor; expectedKey?: string; repairedKey?: string }
  | { type: 'entry'; kind: EntryKind; key: string; actor?: CommittedActor; served: boolean };

export interface CheckSettings {
  store: ObjectStore;
  workDir: string;
  nowMs: number;
  graceMs: number;
  tenant?: string;
  /** When given, confirmed missing alarms get a fresh entry (tags from this source). */
  repair?: NonceSource;
  onFinding: (f: Finding) => void;
  onProgress?: (text: string) => void;
}

export interface CheckCounts {
  actors: number;
  withAlarm: number;
  entries: number;
  actorKinds: Partial<Record<ActorKind, number>>;
  entryKinds: Partial<Record<EntryKind, number>>;
  unservedEntries: number;
  repaired: number;
}

export async function checkIndex(s: CheckSettings): Promise<CheckCounts> {
  const counts: CheckCounts = { actors: 0, withAlarm: 0, entries: 0, actorKinds: {}, entryKinds: {}, unservedEntries: 0, repaired: 0 };
  const cache = new CommittedCache(s.store, s.workDir);
  for await (const { address, seqs } of actorsWithChains(s.store, s.tenant)) {
    counts.actors++;
    s.onProgress?.(`checked ${counts.actors} actors`);
    const actor = await cache.read(address, seqs);
    if (actor.alarmAt !== null) counts.withAlarm++;
    const f = await judgeActor(s, cache, actor);
    if (f.actor.alarmAt === null && f.kind === 'ok') continue; // no alarm: nothing to index
    bump(counts.actorKinds, f.kind);
    if (f.repairedKey) counts.repaired++;
    if (f.kind !== 'ok') s.onFinding(f);
  }
  const serves = servedBy(await liveNodes(s.store, s.nowMs, s.graceMs));
  for (const tenant of s.tenant ? [s.tenant] : await indexTenants(s.store)) {
    for await (const key of listAll(s.store, { prefix: tenantPrefix(tenant) })) {
      counts.entries++;
      const f = await judgeEntry(cache, key, serves);
      bump(counts.entryKinds, f.kind);
      if (!f.served) counts.unservedEntries++;
      if (f.kind !== 'named' || !f.served) s.onFinding(f);
      s.onProgress?.(`checked ${counts.actors} actors, ${counts.entries} index entries`);
    }
  }
  return counts;
}

/** Every actor with links under state/ (its seqs from the same listing), in key order. */
async function* actorsWithChains(store: ObjectStore, tenant?: string): AsyncGenerator<{ address: ActorAddress; seqs: number[] }> {
  let current: { address: ActorAddress; seqs: number[]; id: string } | undefined;
  for await (const key of listAll(store, { prefix: statePrefix(tenant) })) {
    const link = parseLinkKey(key);
    if (!link) continue;
    const id = link.address.key;
    if (current && current.id !== id) yield current;
    if (!current || current.id !== id) current = { address: link.address, seqs: [], id };
    current.seqs.push(link.seq);
  }
  if (current) yield current;
}

async function judgeActor(s: CheckSettings, cache: CommittedCache, first: CommittedActor): Promise<Finding & { type: 'actor' }> {
  let actor = first;
  let kind = await actorKind(s.store, actor);
  if (ACTOR_PROBLEMS.includes(kind) && actor.state !== 'corrupt') {
    const seqs = await listChain(s.store, actor.address); // confirm: did the head move meanwhile?
    if (seqs[seqs.length - 1] !== actor.headSeq) {
      actor = await cache.read(actor.address, seqs);
      kind = await actorKind(s.store, actor);
    }
  }
  const expectedKey = actor.indexed ? keyOf(actor.address, actor.indexed) : undefined;
  if (!s.repair || (kind !== 'missing' && kind !== 'unindexed')) return { type: 'actor', kind, actor, expectedKey };
  return { type: 'actor', kind, actor, expectedKey, repairedKey: await repairEntry(s.store, actor, s.repair) };
}

async function actorKind(store: ObjectStore, actor: CommittedActor): Promise<ActorKind> {
  if (actor.alarmAt === null || actor.indexed === undefined || actor.state !== 'restored') return actorFinding(actor, false, 0);
  const named = actor.indexed;
  const namedExists = named !== null && (await store.head(keyOf(actor.address, named))) !== null;
  if (namedExists && named.at === actor.alarmAt) return 'ok';
  return actorFinding(actor, namedExists, await entriesAt(store, actor.address, actor.alarmAt));
}

/**
 * How many entries list `a` at `dueMs`, in every layout: its tagged folder unsharded and in each
 * shard folder it can be in under any shard count, and the legacy key.
 */
async function entriesAt(store: ObjectStore, a: ActorAddress, dueMs: number): Promise<number> {
  let n = 0;
  for (const shard of [undefined, ...shardsOfActor(a)])
    for await (const key of listAll(store, { prefix: actorEntriesPrefix(a, dueMs, shard) })) if (parseEntryKey(key)) n++;
  if (await store.head(entryKey({ address: a, dueMs, tag: null }))) n++;
  return n;
}

/**
 * Lists a committed alarm nobody can find under a fresh key (R1: no key is written twice) at the
 * alarm's time, tagged with the head writer's generation so that any later owner may remove it
 * (R3) once its state does not name it. The state is not changed: the entry is unnamed, the index's
 * one known exception (docs/alarm-index.md) — delivered when due (the alarm runs, as the committed alarm matches), then
 * removed as unnamed.
 */
async function repairEntry(store: ObjectStore, actor: CommittedActor, nonces: NonceSource): Promise<string> {
  const key = entryKey({ address: actor.address, dueMs: actor.alarmAt!, tag: { generation: actor.generation ?? 0, nonce: nonces.next() } });
  await store.put(key, new Uint8Array(0), { ifNoneMatch: '*' });
  return key;
}

async function judgeEntry(
  cache: CommittedCache,
  key: string,
  serves: (t: string, c: string) => boolean,
): Promise<Finding & { type: 'entry' }> {
  const entry = parseEntryKey(key);
  if (!entry) return { type: 'entry', kind: 'notAnEntry', key, served: true };
  const actor = await cache.get(entry.address);
  return { type: 'entry', kind: entryFinding(entry, actor), key, actor, served: serves(entry.address.tenant, entry.address.className) };
}

async function liveNodes(store: ObjectStore, nowMs: number, graceMs: number): Promise<NodeRecord[]> {
  const out: NodeRecord[] = [];
  for await (const key of listAll(store, { prefix: NODES_PREFIX })) {
    const obj = await store.get(key);
    if (!obj) continue;
    try {
      const r = decodeNode(obj.body);
      if (r.state === 'live' && isLive(r, nowMs, r.graceMs ?? graceMs)) out.push(r);
    } catch {
      // an unreadable record serves nothing
    }
  }
  return out;
}

/** Whether some live node serves the class in the tenant (no live nodes: unknown, so true). */
function servedBy(nodes: NodeRecord[]): (tenant: string, className: string) => boolean {
  if (nodes.length === 0) return () => true;
  return (tenant, className) => nodes.some((n) => n.classes.includes(className) && (n.tenants === null || n.tenants.includes(tenant)));
}

function bump<K extends string>(m: Partial<Record<K, number>>, k: K): void {
  m[k] = (m[k] ?? 0) + 1;
}

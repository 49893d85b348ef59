/**
 * The owner's index sequencing inside the event pipeline (docs/alarm-index.md, alarms/owner.ts): run inside
 * an open write transaction, just before it commits.
 *
 *   plan ─▶ LeaseView + healthy replication? ─▶ PUT the new entry (fresh key) ─▶ record it in
 *   alarm_indexed ─▶ (caller) COMMIT ─▶ deleteAfterUpload(the entry replaced) ─▶ link uploaded ─▶ DELETE
 *
 * If the index cannot be brought in line (the PUT fails, alarm_indexed is unreadable, the lease
 * lapsed) the actor is given up: the caller rolls back and nothing more is uploaded.
 */
import type { ActorAddress } from '../core/address.js';
import { LeaseLost } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import type { Random } from '../core/random.js';
import type { Settings } from '../core/config.js';

export type IndexSettings = Settings<'storeAttemptsMax' | 'storeRetryBaseMs' | 'indexShards'>;
import type { ObjectStore } from '../store/types.js';
import type { ReplacedEntry } from '../replication/index-upload.js';
import { formatIndexed, parseIndexed, type Indexed, type NonceSource } from '../alarms/keys.js';
import { deletable, indexPlan, keyOf, listEntry } from '../alarms/owner.js';
import type { ProtocolRules } from '../alarms/rules.js';
import { readAlarm, readMeta, writeMeta } from './actor-db.js';
import type { Slot } from './actor-slots.js';

export interface IndexDeps {
  store: ObjectStore;
  clock: Clock;
  random: Random;
  config: IndexSettings;
  nonces: NonceSource;
  /** SAFE_RULES everywhere but in the simulator's unsafe variants. */
  rules: ProtocolRules;
}

/**
 * Brings `alarm_indexed` in line with the alarm `after` this transaction commits. Returns the
 * entry to delete once the commit is in the bucket (null: none).
 */
export async function indexBeforeCommit(
  d: IndexDeps,
  slot: Slot,
  address: ActorAddress,
  after: number | null,
  firstUpload = false,
): Promise<ReplacedEntry | null> {
  const { db, replica } = slot;
  const indexed = indexedOf(slot);
  // R4: before the first upload of a local-only actor its alarm is listed under a fresh key — the
  // entry its file names (if any) is not in this bucket's history — and, by the empty-bucket
  // rule, nothing is removed.
  const plan = firstUpload ? { list: after, replaces: null } : indexPlan(after, indexed, d.rules);
  if (plan.list === null && plan.replaces === null) return null;
  if (!replica.healthy())
    throw replica.giveUpNow(new LeaseLost(`cannot index the alarm of ${address.key}: no valid lease or replication given up`));
  let named: Indexed | null = null;
  if (plan.list !== null) {
    const listing = {
      store: d.store,
      clock: d.clock,
      random: d.random,
      nonces: d.nonces,
      rules: d.rules,
      attemptsMax: d.config.storeAttemptsMax,
      retryBaseMs: d.config.storeRetryBaseMs,
      indexShards: d.config.indexShards,
    };
    try {
      named = await listEntry(listing, address, plan.list, replica.generation);
    } catch (e) {
      throw replica.giveUpNow(e);
    }
    replica.index.listed(formatIndexed(named)); // R1, R4: an upload may name it only from now on
  }
  writeMeta(db, 'alarm_indexed', named ? formatIndexed(named) : null);
  const replaced = plan.replaces;
  if (!replaced || !deletable(replaced, replica.generation, d.rules)) return null;
  return { key: keyOf(address, replaced), generation: replaced.tag?.generation ?? null };
}

/**
 * The entry the committed state names, for an actor being destroyed: deleted once its tombstone is
 * in the bucket (the state names nothing from then on, R2). Null when it names none, or one of a
 * newer owner (R3). An unreadable `alarm_indexed` gives the actor up, as before any commit.
 */
export function entryEndedByTombstone(d: IndexDeps, slot: Slot): ReplacedEntry | null {
  const { replica } = slot;
  const indexed = indexedOf(slot);
  const replaced = indexPlan(null, indexed, d.rules).replaces;
  if (!replaced || !deletable(replaced, replica.generation, d.rules)) return null;
  return { key: keyOf(replica.address, replaced), generation: replaced.tag?.generation ?? null };
}

/**
 * A freshly taken actor: its committed alarm must be listed before its first upload (R4), and a
 * legacy entry is migrated. Then the replica may upload (a local-only actor's first snapshot).
 */
export async function indexOnTake(d: IndexDeps, slot: Slot, address: ActorAddress): Promise<void> {
  const { db, replica } = slot;
  const firstUpload = replica.firstUpload();
  if (firstUpload && !d.rules.entryBeforeUpload) await uploadBeforeEntry(slot);
  db.exec('BEGIN IMMEDIATE');
  let replaced: ReplacedEntry | null;
  try {
    replaced = await indexBeforeCommit(d, slot, address, readAlarm(db), firstUpload);
    db.exec('COMMIT');
  } catch (e) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw e;
  }
  if (replaced) replica.index.deleteAfterUpload(replaced);
  replica.start();
  if (firstUpload && !d.rules.entryBeforeUpload) replica.committed();
}

/** TEST-ONLY (rules.entryBeforeUpload off, the order R4 forbids): the first snapshot goes first. */
async function uploadBeforeEntry(slot: Slot): Promise<void> {
  slot.replica.start();
  await slot.replica.sync();
}

/** The entry the committed state names (`alarm_indexed`); an unreadable value gives the actor up. */
function indexedOf({ db, replica }: Slot): Indexed | null {
  try {
    return parseIndexed(readMeta(db, 'alarm_indexed'));
  } catch (e) {
    throw replica.giveUpNow(e);
  }
}

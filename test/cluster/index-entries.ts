/** The sweep tests' reading of the alarm index in the bucket: the entries of a tenant's class, their removal, waiting for the index to drain. */
import { entryKey, parseEntryKey, tenantPrefix } from '../../src/alarms/keys.js';
import { listAll } from '../../src/store/keys.js';
import type { ObjectStore } from '../../src/store/types.js';
import type { Cluster } from '../../support/cluster/cluster.js';
import { waitFor } from '../helpers/wait.js';
import { CLASS } from './alarmed-actors.js';

/** Index entries of `className` in `tenant`. */
export async function entriesOf(store: ObjectStore, tenant: string, className = CLASS) {
  const out = [];
  for await (const key of listAll(store, { prefix: tenantPrefix(tenant) })) {
    const e = parseEntryKey(key);
    if (e && e.address.className === className) out.push(e);
  }
  return out;
}

/** Deletes the tenant's entries of the class due at any time but `at`; returns how many. */
export async function removeEntriesNotAt(store: ObjectStore, tenant: string, at: number): Promise<number> {
  const extra = (await entriesOf(store, tenant)).filter((e) => e.dueMs !== at).map(entryKey);
  if (extra.length > 0) await store.deleteMany(extra);
  return extra.length;
}

/** Waits until the index holds no entry of the class in the tenant (each fired alarm's entry is removed). */
export async function indexDrained(store: ObjectStore, tenant: string, boundMs: number): Promise<number> {
  await waitFor(
    `the ${tenant} index to drain`,
    boundMs,
    async () => ((await entriesOf(store, tenant)).length === 0 ? true : undefined),
    100,
  );
  return Date.now();
}

/**
 * Waits until the index holds one entry per armed actor; returns how many extra entries of
 * earlier arming passes it then removed by hand (0 when the re-arms removed them all).
 */
export async function settleEntries(c: Cluster, tenant: string, actors: number, at: number): Promise<number> {
  const settled = async () => (await entriesOf(c.store(), tenant)).length === actors;
  return waitFor('one index entry per armed actor', 30_000, settled).then(
    () => 0,
    // On a loaded machine a re-arm's replica can be given up (its lease lapsed) after the durable
    // call was answered by a retry, and the DELETE of the entry that retry's first attempt replaced
    // is then never sent: such an entry is extra (the "one wake-up" of docs/alarm-index.md), and the earlier passes'
    // times are not `at`, which every actor's head names (each arm was durable). Removed here so
    // the drain below is not waiting an hour for it; nothing the test asserts depends on it.
    () => removeEntriesNotAt(c.store(), tenant, at),
  );
}

/**
 * Builds bench/drain's backlog fast: one template actor is run through a real node (its alarm
 * armed by a durable call, so its chain, its hold and its index entry are what that node really
 * uploaded), then those objects are copied under K−1 other names:
 *
 *   state/<t>/<c>/<hex tmpl>/<seq>          → state/<t>/<c>/<hex name>/<seq>      (same bytes)
 *   holds/<t>/<c>/<hex tmpl>                → holds/<t>/<c>/<hex name>            (same record)
 *   alarms/<t>/<due>/<c>.t/<hex tmpl>/<tag> → alarms/<t>/<due>/<c>.t/<hex name>/<tag>
 *
 * Link headers and hold records carry no actor name, so each copy is byte for byte what the
 * node would have uploaded for that actor — except that every copy shares the template's entry
 * tag (generation and nonce); the keys still differ, since the name is in them. Arming K actors
 * through the node instead costs ~20 ms each (a durable call), i.e. ~35 minutes for 100k.
 */
import { nameHex, type ActorAddress } from '../../src/core/address.js';
import { entryKey, parseEntryKey, tenantPrefix, type IndexEntry } from '../../src/alarms/keys.js';
import { holdKey } from '../../src/leases/records.js';
import { chainPrefix } from '../../src/replication/state-keys.js';
import { listAll } from '../../src/store/keys.js';
import type { ObjectStore } from '../../src/store/types.js';

export interface Template {
  links: { suffix: string; body: Uint8Array }[];
  hold: Uint8Array;
  entries: IndexEntry[];
}

/** Reads what the bucket holds for `a` (its chain, its hold, its index entries). */
export async function readTemplate(store: ObjectStore, a: ActorAddress): Promise<Template> {
  const prefix = chainPrefix(a);
  const links: Template['links'] = [];
  for await (const key of listAll(store, { prefix })) links.push({ suffix: key.slice(prefix.length), body: (await store.get(key))!.body });
  const hold = (await store.get(holdKey(a)))?.body;
  const entries: IndexEntry[] = [];
  for await (const key of listAll(store, { prefix: tenantPrefix(a.tenant) })) {
    const e = parseEntryKey(key);
    if (e && e.address.className === a.className && nameHex(e.address.name) === nameHex(a.name)) entries.push(e);
  }
  if (links.length === 0 || !hold || entries.length !== 1) {
    throw new Error(
      `template ${a.name}: expected a chain, a hold and one index entry; found ${links.length} links, ${hold ? 'a' : 'no'} hold, ${entries.length} entries`,
    );
  }
  return { links, hold, entries };
}

/** The puts that make `a` a copy of the template. */
export function copyPuts(t: Template, a: ActorAddress): [string, Uint8Array][] {
  const empty = new Uint8Array(0);
  return [
    ...t.links.map((l): [string, Uint8Array] => [chainPrefix(a) + l.suffix, l.body]),
    [holdKey(a), t.hold],
    ...t.entries.map((e): [string, Uint8Array] => [entryKey({ ...e, address: a }), empty]),
  ];
}

/** Copies the template to every address, `inFlight` puts at once; `onCopied(n)` after each actor. */
export async function cloneBacklog(
  store: ObjectStore,
  t: Template,
  addresses: readonly ActorAddress[],
  inFlight: number,
  onCopied: (n: number) => void,
): Promise<void> {
  let next = 0;
  let copied = 0;
  const lane = async () => {
    while (next < addresses.length) {
      const a = addresses[next++]!;
      for (const [key, body] of copyPuts(t, a)) await store.put(key, body);
      onCopied(++copied);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, addresses.length) }, lane));
}

/**
 * Which live node lists which folder of a sharded index (docs/alarm-index.md "How shards are
 * divided"): rendezvous hashing with bounded loads. Shard by shard, 0 … S − 1, each goes to the
 * node of highest weight (`weight(nodeId, "<tenant>#<shard>")`, shard.ts) among the nodes serving
 * the tenant that own fewer than ⌈S/N⌉ so far.
 *
 *   plain rendezvous   each shard to its highest weight: the busiest of N nodes owns 1.5× the
 *                      mean at S = 128, N = 10; 1.9× at 1,024 and 100; 2.7× at 4,096 and 1,000
 *                      (a drain ends when the busiest node's shards are done)
 *   bounded loads      no node owns more than ⌈S/N⌉: 1.02×, 1.07× and 1.22× there
 *
 * Every node computes the same owners from the same live set, in any order (ties go to the lower
 * id). A node joining or dying moves its own share and about as many again (a node that fills up
 * sooner or later shifts the shards after), against its share alone with plain rendezvous: 20 of
 * 1,024 shards at N = 100 rather than 10. Who lists a folder decides only who delivers its
 * entries; nodes that disagree about the live set leave a folder to two nodes (holds keep one
 * delivery at a time) or to none (its entries are anyone's after three margins, and the walk of
 * other folders finds them).
 */
import { fnv, mixed, weight } from './shard.js';

/** The owner (a node id) of each shard 0 … shards − 1 of `tenant` among `nodeIds` (empty: none). */
export function shardOwners(tenant: string, shards: number, nodeIds: readonly string[]): string[] {
  const n = nodeIds.length;
  if (n === 0) return [];
  const cap = Math.ceil(shards / n);
  const load = new Int32Array(n);
  // weight(id, key) is the FNV-1a of `${id}\0${key}`: the node's part is hashed once.
  const start = nodeIds.map((id) => fnv(`${id}\u0000`));
  const owners: string[] = [];
  for (let s = 0; s < shards; s++) {
    const key = shardWeightKey(tenant, s);
    let best = -1;
    let bestWeight = -1;
    for (let i = 0; i < n; i++) {
      if (load[i]! >= cap) continue;
      const w = mixed(fnv(key, start[i]!));
      if (w > bestWeight || (w === bestWeight && nodeIds[i]! < nodeIds[best]!)) {
        best = i;
        bestWeight = w;
      }
    }
    load[best]!++;
    owners.push(nodeIds[best]!);
  }
  return owners;
}

/** The shards of `tenant` that `self` owns among `nodeIds` (shardOwners). */
export function ownedShards(tenant: string, shards: number, nodeIds: readonly string[], self: string): number[] {
  return ownedOf(shardOwners(tenant, shards, nodeIds), self);
}

/** The weight a node draws for a shard (the test's check that shardOwners hashes as `weight` does). */
export function shardWeight(nodeId: string, tenant: string, shard: number): number {
  return weight(nodeId, shardWeightKey(tenant, shard));
}

/** What a shard's rendezvous weights are drawn for: never an actor address (those have two '/'). */
function shardWeightKey(tenant: string, shard: number): string {
  return `${tenant}#${shard}`;
}

function ownedOf(owners: readonly string[], self: string): number[] {
  const owned: number[] = [];
  for (const [s, id] of owners.entries()) if (id === self) owned.push(s);
  return owned;
}

/**
 * `shardOwners`, remembered per tenant for the last live set and shard count it was asked with.
 * Computing it draws S × N rendezvous weights (four million at S = 4,096 and N = 1,000, ~0.2 s of CPU)
 * while the live set changes only when a node joins or dies; a sweep asks every time. One answer
 * is kept per tenant (the tenants a node sweeps), with each asking node's own shards (one node in
 * a process; every node of the fleet model, which shares one), so it stays bounded.
 */
export class OwnedShards {
  readonly #last = new Map<string, { key: string; owners: readonly string[]; bySelf: Map<string, readonly number[]> }>();

  /** The shards `self` owns. */
  of(tenant: string, shards: number, nodeIds: readonly string[], self: string): readonly number[] {
    const last = this.#owners(tenant, shards, nodeIds);
    let owned = last.bySelf.get(self);
    if (!owned) last.bySelf.set(self, (owned = ownedOf(last.owners, self)));
    return owned;
  }

  /**
   * Whether `self` lists folder `shard`: under this shard count, or a larger one (a folder past
   * S holds the actors of shard `shard & (S − 1)`, whose owner it goes to).
   */
  owns(tenant: string, shards: number, nodeIds: readonly string[], self: string, shard: number): boolean {
    return this.#owners(tenant, shards, nodeIds).owners[shard & (shards - 1)] === self;
  }

  #owners(tenant: string, shards: number, nodeIds: readonly string[]) {
    const key = `${shards}\u0000${nodeIds.join('\u0000')}`;
    let last = this.#last.get(tenant);
    if (last?.key !== key) this.#last.set(tenant, (last = { key, owners: shardOwners(tenant, shards, nodeIds), bySelf: new Map() }));
    return last;
  }
}

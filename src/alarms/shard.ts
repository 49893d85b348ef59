/**
 * Sharding of index entries among live nodes (docs/alarm-index.md "The sweep"): a rendezvous (highest random
 * weight) hash of the actor address over the live nodes serving its tenant. Every node computes
 * the same owner from the same live set; when a node leaves, only its entries move.
 */
import type { NodeRecord } from '../leases/records.js';

/** A 32-bit hash of a string (FNV-1a, then a murmur3-style finaliser). */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A node's weight for a key (an actor address, or a shard folder): the rendezvous hash's draw. */
export function weight(nodeId: string, key: string): number {
  return hash32(`${nodeId}\u0000${key}`);
}

export function servesTenant(n: Pick<NodeRecord, 'tenants'>, tenant: string): boolean {
  return n.tenants === null || n.tenants.includes(tenant);
}

/** The nodeId whose shard holds `addressKey` among `nodes` (undefined when there are none). */
export function shardOwner(addressKey: string, nodeIds: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  for (const id of nodeIds) {
    const w = weight(id, addressKey);
    if (w > bestWeight || (w === bestWeight && best !== undefined && id < best)) {
      best = id;
      bestWeight = w;
    }
  }
  return best;
}

/**
 * The shards of a tenant's index (0 … shards − 1) that `self` owns: each shard goes, by the same
 * rendezvous hash, to one of `nodeIds` (the live nodes serving the tenant). Every node computes the
 * same owners from the same live set; a node joining or leaving moves about 1/N of the shards.
 */
export function ownedShards(tenant: string, shards: number, nodeIds: readonly string[], self: string): number[] {
  const owned: number[] = [];
  for (let s = 0; s < shards; s++) if (shardOwner(shardWeightKey(tenant, s), nodeIds) === self) owned.push(s);
  return owned;
}

/** Whether `self` owns shard `shard` of the tenant's index among `nodeIds`. */
export function ownsShard(tenant: string, shard: number, nodeIds: readonly string[], self: string): boolean {
  return shardOwner(shardWeightKey(tenant, shard), nodeIds) === self;
}

/** What a shard's rendezvous weights are drawn for: never an actor address (those have two '/'). */
function shardWeightKey(tenant: string, shard: number): string {
  return `${tenant}#${shard}`;
}

/**
 * `ownedShards`, remembered per tenant for the last live set it was asked with. Computing it draws
 * S × N rendezvous weights — two million at S = 2,048 and N = 1,000, about half a second of CPU —
 * while the live set changes only when a node joins or dies; a sweep asks every time. One answer
 * is kept per tenant (the tenants a node sweeps), so it stays bounded.
 */
export class OwnedShards {
  readonly #last = new Map<string, { key: string; owned: readonly number[] }>();

  of(tenant: string, shards: number, nodeIds: readonly string[], self: string): readonly number[] {
    const key = `${shards}\u0000${self}\u0000${nodeIds.join('\u0000')}`;
    const last = this.#last.get(tenant);
    if (last?.key === key) return last.owned;
    const owned = ownedShards(tenant, shards, nodeIds, self);
    this.#last.set(tenant, { key, owned });
    return owned;
  }
}

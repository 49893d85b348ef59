/**
 * Sharding of index entries among live nodes (docs/alarm-index.md "The sweep"): a rendezvous (highest random
 * weight) hash of the actor address over the live nodes serving its tenant. Every node computes
 * the same owner from the same live set; when a node leaves, only its entries move.
 */
import type { NodeRecord } from '../leases/records.js';

/** FNV-1a's state before any character. */
const FNV_START = 0x811c9dc5;

/** FNV-1a's state after `s`, from state `h` (hash32 of a + b is mixed(fnv(b, fnv(a)))). */
export function fnv(s: string, h = FNV_START): number {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h;
}

/** A 32-bit hash of a string (FNV-1a, then a murmur3-style finaliser). */
export function hash32(s: string): number {
  return mixed(fnv(s));
}

/** The murmur3-style finaliser of an FNV-1a state. */
export function mixed(h: number): number {
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

/**
 * `planSweep`: which of the overdue entries a sweep read this node delivers (docs/alarm-index.md "The sweep").
 *
 *   own       the entry's shard (rendezvous over live nodes serving its tenant and class) is this node;
 *             in a sharded index, the entry was listed in a shard folder this node owns
 *   anyone's  overdue `anyonesAfterMargins` margins or more: any node serving its class may take it
 *   skipped   another node's shard, a class this node does not serve, or in flight / retrying here
 *
 * Own entries go first; anyone's keep a reserve (an eighth of the cap), taken from a random
 * rotation so surviving nodes do not all deliver the same ones, and take what own entries leave.
 * Entries already in flight or retrying do not count. At most `cap` deliveries, one per actor (its
 * earliest entry). What the cap left behind is reported (`ownLeftBehind`, `anyonesLeftBehind`) so
 * the sweep neither moves its cursor past own entries it did not offer nor waits while they are
 * due. Pure: the rotation comes from the injected Random.
 */
import { invariant } from '../core/invariant.js';
import type { Random } from '../core/random.js';
import type { IndexEntry } from './keys.js';
import { servesTenant, shardOwner } from './shard.js';

export interface SweepNode {
  nodeId: string;
  tenants: string[] | null;
  classes: string[];
}

export interface PlanInput {
  entries: readonly IndexEntry[];
  live: readonly SweepNode[];
  self: SweepNode;
  /** Actors (formatted addresses) this node has in flight or retrying. */
  busy: { has(actor: string): boolean };
  nowMs: number;
  marginMs: number;
  anyonesAfterMargins: number;
  cap: number;
  anyonesReserve: number;
  random: Random;
}

export interface Plan {
  deliveries: IndexEntry[];
  own: number;
  anyones: number;
  skipped: number;
  /** Own entries this node could deliver that the cap left out, earliest first. */
  ownLeftBehind: IndexEntry[];
  /** Anyone's entries this node could deliver that the cap left out. */
  anyonesLeftBehind: number;
}

/** What sorting entries needs of a plan's input (not its cap, reserve or rotation). */
export type SortInput = Pick<PlanInput, 'live' | 'self' | 'busy' | 'nowMs' | 'marginMs' | 'anyonesAfterMargins'>;

/**
 * Sorts entries, given in due order, into own, anyone's and skipped, as planSweep does: the
 * sweep feeds it while it reads (to stop once reading on could not change the plan), then plans
 * from it.
 */
export class EntrySorter {
  readonly own: IndexEntry[] = [];
  readonly anyones: IndexEntry[] = [];
  skipped = 0;
  readonly #seen = new Set<string>();
  readonly #anyonesBefore: number;

  constructor(private readonly p: SortInput) {
    this.#anyonesBefore = p.nowMs - p.anyonesAfterMargins * p.marginMs;
  }

  /**
   * `ownShard`: where the entry was listed decides whose it is — true, a shard folder this node
   * owns; false, another node's shard folder (anyone's once overdue enough); absent, the entry's
   * own rendezvous over the nodes serving its class (the unsharded layout).
   */
  add(e: IndexEntry, ownShard?: boolean): void {
    const key = e.address.key;
    if (this.#seen.has(key) || this.p.busy.has(key) || !this.p.self.classes.includes(e.address.className)) {
      this.skipped++;
      return;
    }
    const own = ownShard ?? shardOwner(key, shardNodes(this.p.live, e.address.tenant, e.address.className)) === this.p.self.nodeId;
    if (own) this.own.push(e);
    else if (e.dueMs <= this.#anyonesBefore) this.anyones.push(e);
    else {
      this.skipped++;
      return;
    }
    this.#seen.add(key);
  }

  /**
   * Whether a sweep reading a backlog may stop here: own entries fill what the reserve leaves and
   * anyone's fill the reserve (entries read later could only be left behind, or widen the
   * rotation), or own entries alone fill the cap (anyone's met so far keep their share of the
   * reserve; those further on are met by the sweeps after, as the cursor moves on). Either way the
   * plan is full, and its own entries are the earliest ones a plan of everything would take.
   */
  fills(cap: number, anyonesReserve: number): boolean {
    const reserve = Math.min(anyonesReserve, cap);
    const own = this.own.length;
    return own >= cap || (own >= cap - reserve && this.anyones.length >= reserve);
  }
}

export function planSweep(p: PlanInput): Plan {
  const sorter = new EntrySorter(p);
  for (const e of [...p.entries].sort((a, b) => a.dueMs - b.dueMs)) sorter.add(e);
  return planSorted(sorter, p);
}

/** The plan of entries already sorted (EntrySorter), in due order. */
export function planSorted(sorted: EntrySorter, p: Pick<PlanInput, 'cap' | 'anyonesReserve' | 'random'>): Plan {
  const { own, anyones, skipped } = sorted;
  const reserve = Math.min(p.anyonesReserve, anyones.length, p.cap);
  const ownTaken = own.slice(0, p.cap - reserve);
  const rotated = rotate(anyones, p.random);
  const anyonesTaken = rotated.slice(0, p.cap - ownTaken.length);
  const deliveries = [...ownTaken, ...anyonesTaken];
  checkPlan(deliveries, p.cap);
  return {
    deliveries,
    own: ownTaken.length,
    anyones: anyonesTaken.length,
    skipped: skipped + (own.length - ownTaken.length) + (anyones.length - anyonesTaken.length),
    ownLeftBehind: own.slice(ownTaken.length),
    anyonesLeftBehind: anyones.length - anyonesTaken.length,
  };
}

/** A plan has at most its cap of deliveries, and one per actor (invariant: INTERNAL otherwise). */
export function checkPlan(deliveries: readonly IndexEntry[], cap: number): void {
  invariant(deliveries.length <= Math.max(0, cap), () => `sweep plan of ${deliveries.length} deliveries is over its cap ${cap}`);
  const actors = new Set(deliveries.map((e) => e.address.key));
  invariant(actors.size === deliveries.length, () => `sweep plan delivers to ${actors.size} actors in ${deliveries.length} deliveries`);
}

/**
 * The live nodes an entry is sharded among: those serving its tenant and its class. The original
 * design sharded over every live node and let a node skip a class it does not serve, so in a
 * cluster of mixed classes the entries hashed to a node that cannot run them waited three margins for
 * anyone's; sharding among the nodes that can run them gives every entry an owner at once. Every
 * node computes the same set from the same records (each record lists its classes).
 */
function shardNodes(live: readonly SweepNode[], tenant: string, className: string): string[] {
  return live.filter((n) => servesTenant(n, tenant) && n.classes.includes(className)).map((n) => n.nodeId);
}

function rotate<T>(xs: T[], random: Random): T[] {
  if (xs.length < 2) return xs;
  const start = random.int(xs.length);
  return [...xs.slice(start), ...xs.slice(0, start)];
}

/**
 * The simulated network between the nodes and the one shared bucket (a MemoryStore on the
 * virtual clock). Every store request of the code under test goes through a node's `NodeLink`,
 * so the simulator knows who sent it.
 *
 * Fault model (all draws from the seed; rates are per-seed parameters, see params.ts):
 *   - latency: each request takes effect after a delay drawn from a three-part distribution —
 *     fast (1–5 ms, most requests), slow (5–80 ms) and spikes (100 ms – spikeMaxMs); different
 *     delays reorder requests exactly as a network would;
 *   - failure: with `failP` a request is refused without being applied (StoreUnavailable);
 *   - timeout that lands later: with `timeoutP` a PUT or DELETE is reported failed
 *     (AmbiguousWrite) after `timeoutAfterMs` while it is applied at a time drawn up to
 *     `landLateMaxMs` (before or after the caller hears of it); a conditional PUT is checked
 *     against the bucket of that moment;
 *   - aimed hang: a node is cut off ('hang') just as it sends a link upload (a late commit in
 *     the making) or the per-actor LIST of a stale removal (its lease runs out between its
 *     check and the listing; meanwhile the workload re-sets that alarm time on the actor, so a
 *     newer owner may list an entry there — the race R3 is for);
 *   - aimed delivery fault (sharded seeds): a node is cut off ('fail', its lease renewing) just as
 *     it starts delivering an entry its own walk offered (overdue, not yet anyone's), for longer
 *     than its idle timeout: the delivery fails, the release of the hold fails too, and the node
 *     (spared by the chaos from then on, the actor left alone by the workload: drivers.ts)
 *     stays live holding an actor whose entry sits behind its walk's cursor — other nodes drop
 *     that entry (its holder is live), so only the holder's own sweep delivers it: its walk
 *     starting over (noStartOver), or its slow walk once the shard moved to another node
 *     (noOtherShards); drawn from a random stream of its own (params.ts DELIVERY_STREAM);
 *   - aimed fault: a joining node's first upload of a local-only actor (link 1) is delayed at
 *     the bucket by `aimedDelayMs` while that node is cut off (its lease stops renewing), so it is
 *     fenced and another node takes the actor before the snapshot lands;
 *   - cut-off (per node, `cut`): the node's requests fail after a short delay ('fail') or are
 *     held until the cut heals and then sent ('hang'); with `leaseRenews` its lease record
 *     (`nodes/<id>`) still gets through, so it stays live while everything else fails;
 *   - crash and pause (node-clock.ts): a dead node sends nothing and never hears a reply; a
 *     paused node hears replies only when it resumes. Requests already sent still land.
 * Requests made outside any node (the invariant checker reads synchronously) see no faults.
 */
import type { SimClock } from '../../src/core/clock.js';
import { nameFromHex, parseAddress, type ActorAddress } from '../../src/core/address.js';
import { StoreUnavailable } from '../../src/core/errors.js';
import type { SeededRandom } from '../../src/core/random.js';
import { MemoryStore, type Fault, type StoreOp, type StoreRequest } from '../../src/store/memory.js';
import type { ListOptions, ListPage, ObjectHead, ObjectStore, PutCondition, StoredObject } from '../../src/store/types.js';
import type { NodeClock } from './node-clock.js';
import type { ActorEvent } from '../../src/workers/messages.js';
import type { FaultParams } from './params.js';

export type CutMode = 'fail' | 'hang';

interface Cut {
  mode: CutMode;
  leaseRenews: boolean;
  waiters: (() => void)[];
}

/** Debugging aid: SIM_TRACE=<substring> prints every request whose key contains it. */
const TRACE = process.env.SIM_TRACE;
const FIRST_LINK = /^state\/.+\/00000000000000000001$/;
const ANY_LINK = /^state\/.+\/\d{20}$/;
const ACTOR_ENTRIES = /^alarms\/([^/]+)\/(\d{15})\/([^/]+)\.t\/([0-9a-f]+)\/$/;

/** A stale removal whose listing is held: the workload re-sets that alarm time on the actor. */
export interface RaceTarget {
  address: ActorAddress;
  dueMs: number;
  heldBy: string;
}

export class Network {
  readonly bucket: MemoryStore;
  private requester: string | undefined;
  private readonly cuts = new Map<string, Cut>();
  /** Held stale-removal listings (see aimAtRequest); the workload aims at them until they heal. */
  readonly raceTargets: RaceTarget[] = [];
  /** Actors of aimed deliveries (aimAtDelivery): the workload leaves them alone from then on. */
  readonly quiet = new Set<string>();
  /** Nodes that took an aimed delivery's hold: the chaos leaves them up from then on. */
  readonly spared = new Set<string>();
  /** Nodes whose next first upload (link 1 of a local-only actor) draws the aimed fault. */
  readonly aimAt = new Set<string>();
  stats = { requests: 0, failed: 0, timedOut: 0, aimed: 0, firstUploadsDelayed: 0, deliveriesCut: 0, cuts: 0 };
  healed = false;

  constructor(
    readonly clock: SimClock,
    private readonly random: SeededRandom,
    private readonly p: FaultParams,
    /** The aimed delivery fault's own stream: its draws leave every other draw of the run where it was. */
    private readonly deliveryRandom?: SeededRandom,
  ) {
    this.bucket = new MemoryStore({ clock, faults: (r) => this.faultFor(r) });
  }

  link(nodeId: string, clock: NodeClock): NodeLink {
    return new NodeLink(this, nodeId, clock);
  }

  /** Runs `call` (which must reach the bucket synchronously) as a request of `nodeId`. */
  as<T>(nodeId: string, call: () => Promise<T>): Promise<T> {
    this.requester = nodeId;
    try {
      return call();
    } finally {
      this.requester = undefined;
    }
  }

  cutOff(nodeId: string, mode: CutMode, leaseRenews: boolean, forMs: number): void {
    if (this.cuts.has(nodeId) || this.healed) return;
    this.stats.cuts++;
    this.cuts.set(nodeId, { mode, leaseRenews, waiters: [] });
    this.clock.setTimer(forMs, () => this.heal(nodeId));
  }

  heal(nodeId: string): void {
    const cut = this.cuts.get(nodeId);
    if (!cut) return;
    this.cuts.delete(nodeId);
    for (const w of cut.waiters) w();
  }

  healAll(): void {
    this.healed = true;
    this.aimAt.clear();
    this.raceTargets.length = 0;
    for (const id of [...this.cuts.keys()]) this.heal(id);
  }

  /** What a cut does to this request of `nodeId` now; undefined: it goes through. */
  cutFor(nodeId: string, key: string): Cut | undefined {
    const cut = this.cuts.get(nodeId);
    if (!cut) return undefined;
    if (cut.leaseRenews && key === `nodes/${nodeId}`) return undefined;
    return cut;
  }

  /**
   * Aimed cut-offs: a node is cut off ('hang', its lease not renewing) just as it sends a link
   * upload (a late commit in the making) or the per-actor LIST of a stale-entry removal (its lease
   * runs out between its check and the listing); the request is held with the rest.
   */
  aimAtRequest(nodeId: string, op: StoreOp, key: string): void {
    if (this.healed || this.cuts.has(nodeId)) return;
    const p = op === 'put' && ANY_LINK.test(key) ? this.p.aimLinkP : op === 'list' && ACTOR_ENTRIES.test(key) ? this.p.aimListP : 0;
    if (p === 0 || this.random.float() >= p) return;
    this.stats.aimed++;
    const forMs = Math.floor(this.p.marginMs * (1.2 + 2 * this.random.float()));
    this.cutOff(nodeId, 'hang', false, forMs);
    const m = op === 'list' ? ACTOR_ENTRIES.exec(key) : null;
    if (!m) return;
    const target = {
      address: parseAddress({ tenant: m[1], className: m[3], name: nameFromHex(m[4]!) }),
      dueMs: Number(m[2]),
      heldBy: nodeId,
    };
    this.raceTargets.push(target);
    this.clock.setTimer(forMs + this.p.marginMs, () => this.raceTargets.splice(this.raceTargets.indexOf(target), 1));
  }

  /**
   * The aimed delivery fault: `nodeId` is about to run `event`. A delivery the sweep offered
   * (`shard` set) of an entry overdue by less than anyone's threshold came from the node's own
   * walk; with aimDeliveryP the node is cut off ('fail', its lease renewing) from now on, so the
   * delivery fails after the hold was taken and the hold's release at the idle timeout fails too.
   */
  aimAtDelivery(nodeId: string, event: ActorEvent): void {
    const r = this.deliveryRandom;
    if (!r || this.p.aimDeliveryP === 0 || this.healed || this.cuts.has(nodeId)) return;
    if (event.type !== 'deliver' || event.shard === undefined) return;
    if (this.clock.now() - event.dueMs >= this.p.anyonesAfterMs) return;
    if (r.float() >= this.p.aimDeliveryP) return;
    this.stats.aimed++;
    this.stats.deliveriesCut++;
    this.quiet.add(event.address.key);
    this.spared.add(nodeId);
    this.cutOff(nodeId, 'fail', true, this.p.aimDeliveryCutMs);
  }

  private faultFor(r: StoreRequest): Fault | undefined {
    const node = this.requester;
    if (node === undefined) return undefined;
    this.stats.requests++;
    const f = this.drawFault(node, r);
    if (TRACE && r.key.includes(TRACE))
      console.log(
        `${this.clock.now() - 1_800_000_000_000} ${node} ${r.op} ${r.key} ${JSON.stringify(r.condition ?? '')} ${JSON.stringify(f ?? '')}`,
      );
    return f;
  }

  private drawFault(node: string, r: StoreRequest): Fault | undefined {
    if (this.aimAt.has(node) && r.op === 'put' && FIRST_LINK.test(r.key)) return this.aimed(node);
    if (this.healed) return { delayMs: this.latency() };
    const x = this.random.float();
    if (x < this.p.failP) {
      this.stats.failed++;
      return { fail: true };
    }
    if ((r.op === 'put' || r.op === 'delete') && x < this.p.failP + this.p.timeoutP) {
      this.stats.timedOut++;
      const afterMs = this.p.timeoutAfterMs;
      return { timeout: { afterMs, landAfterMs: 1 + this.random.int(this.p.landLateMaxMs) } };
    }
    return { delayMs: this.latency() };
  }

  private aimed(node: string): Fault {
    this.aimAt.delete(node);
    this.stats.aimed++;
    this.stats.firstUploadsDelayed++;
    this.cutOff(node, 'fail', false, this.p.aimedCutMs);
    return { delayMs: this.p.aimedDelayMs };
  }

  private latency(): number {
    const x = this.random.float();
    if (x < this.p.spikeP) return 100 + this.random.int(this.p.spikeMaxMs);
    if (x < this.p.spikeP + this.p.slowP) return 5 + this.random.int(75);
    return 1 + this.random.int(5);
  }
}

const never = <T>() => new Promise<T>(() => undefined);

/** One node's way to the bucket: cut-offs, crash and pause applied to its requests and replies. */
export class NodeLink implements ObjectStore {
  readonly description = 'sim-link';

  constructor(
    private readonly net: Network,
    private readonly nodeId: string,
    private readonly clock: NodeClock,
  ) {}

  get(key: string): Promise<StoredObject | null> {
    return this.send('get', key, () => this.net.bucket.get(key));
  }

  head(key: string): Promise<ObjectHead | null> {
    return this.send('head', key, () => this.net.bucket.head(key));
  }

  put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    return this.send('put', key, () => this.net.bucket.put(key, body, condition));
  }

  delete(key: string): Promise<void> {
    return this.send('delete', key, () => this.net.bucket.delete(key));
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    await Promise.all(keys.map((k) => this.delete(k)));
  }

  list(options: ListOptions = {}): Promise<ListPage> {
    return this.send('list', options.prefix ?? '', () => this.net.bucket.list(options));
  }

  async close(): Promise<void> {
    // The bucket is shared: a node stopping closes only its own link.
  }

  private async send<T>(op: StoreOp, key: string, call: () => Promise<T>): Promise<T> {
    if (this.clock.isDead) return never();
    this.net.aimAtRequest(this.nodeId, op, key);
    const cut = this.net.cutFor(this.nodeId, key);
    if (cut?.mode === 'fail') {
      await this.clock.sleep(1 + (key.length % 5));
      throw new StoreUnavailable(`sim: node ${this.nodeId} is cut off from the bucket`);
    }
    if (cut?.mode === 'hang') await new Promise<void>((resolve) => cut.waiters.push(resolve));
    if (this.clock.isDead) return never();
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await this.net.as(this.nodeId, call) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    await this.clock.sleep(0); // a dead node never hears the reply; a paused one only at resume
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }
}

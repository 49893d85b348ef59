/**
 * One node of the fleet model: the real Sweeper (src/alarms/sweep.ts, with plan-sweep.ts and the
 * shard owners of shard.ts) and the real AlarmDelivery (timer, bounded queue, delivery limit:
 * src/main/alarm-delivery.ts), on the fleet's virtual clock, over the modelled bucket. What is
 * modelled instead of run:
 *
 *   the bucket      index LISTs answered by index-store.ts after an S3 round trip (s3-model.ts);
 *                   every other request only costs its round trip and is counted
 *   a delivery      constant CPU on its machine's cores, then the requests of one (hold PUT, the
 *                   chain's LIST, the snapshot's GET, the link's PUT) one after another; then the
 *                   index entry joins the node's delete batch (≤ 1,000 keys, ≤ 50 ms: one
 *                   DeleteObjects) and the hold is released (one PUT)
 *   throttling      every request goes through the node's real Governor (src/store/throttle: one
 *                   AIMD window per request class, a 503 halves it, backoff, lease requests
 *                   around every window), as a node's store does; one governor per node where a
 *                   node has one per thread
 *   a duplicate     an entry delivered elsewhere already (listed before its delete landed, or
 *                   anyone's): hold PUT, chain LIST, snapshot GET, the stale check's LIST, release
 *                   PUT; an actor another node is delivering now: hold PUT and GET, then dropped
 *   the sweep's CPU per LIST and per key read, and per (unsharded key × live node) hashed by the
 *                   planner's rendezvous, on the same cores
 *   a machine       `cores` shared by `nodesPerMachine` nodes (one node a machine by default): a
 *                   job waits for the core free soonest, whichever of its machine's nodes gave it
 *   membership      the live set is fixed; liveNodes is one LIST of nodes/ per maxAge, and each
 *                   node renews its lease (one PUT) every leasePeriodMs / 3
 */
import type { ActorAddress } from '../../../src/core/address.js';
import { ClockScheduler } from '../../../src/core/clock-scheduler.js';
import type { ResolvedConfig } from '../../../src/core/config.js';
import { silentLogger } from '../../../src/core/logger.js';
import type { SeededRandom } from '../../../src/core/random.js';
import { actorEntriesPrefix, parseEntryKey, shardOfKey, tenantPrefix } from '../../../src/alarms/keys.js';
import type { SweepNode } from '../../../src/alarms/plan-sweep.js';
import { requestClass, type StoreVerb } from '../../../src/store/throttle/classes.js';
import { Governor } from '../../../src/store/throttle/governor.js';
import { throttledError } from '../../../src/store/throttle/signal.js';
import type { OwnedShards } from '../../../src/alarms/shard-owners.js';
import { Sweeper, type SweepHost, type SweepResult } from '../../../src/alarms/sweep.js';
import { AlarmDelivery } from '../../../src/main/alarm-delivery.js';
import type { NodeMetrics } from '../../../src/main/metrics.js';
import type { ListOptions, ListPage, ObjectStore } from '../../../src/store/types.js';
import type { EventResult } from '../../../src/workers/messages.js';
import type { FleetClock } from './clock.js';
import { FLEET_TENANT, actorKey, idOfKey, type IndexStore } from './index-store.js';
import type { S3Model, Verb } from './s3-model.js';

/** What a node's work costs in CPU (ms), beyond the bucket's round trips. */
export interface CpuInputs {
  /** Cores of one machine. */
  cores: number;
  /** Nodes that share one machine's cores (nodes 0 … P − 1 the first machine, and so on). */
  nodesPerMachine: number;
  deliveryMinMs: number;
  deliveryMaxMs: number;
  /** A duplicate or dropped delivery, ms. */
  duplicateMs: number;
  /** One LIST request through the SDK, ms. */
  listMs: number;
  /** Parsing and sorting one listed key, µs. */
  keyUs: number;
  /** One rendezvous weight (an unsharded entry, for each live node), ns. */
  weightNs: number;
}

/** The store verb of each modelled request, for its governor class. */
const STORE_VERB: Record<Verb, StoreVerb> = { GET: 'get', PUT: 'put', LIST: 'list', DeleteObjects: 'deleteMany' };
/** One 503 SlowDown answer; the governor only reads its details, so every refusal shares it. */
const SLOW_DOWN = throttledError('503 SlowDown (fleet model)');

const PENDING = 0;
const IN_FLIGHT = 1;
const DELIVERED = 2;

/** What every node of a run shares: time, the bucket, the index, the alarms' fate. */
export interface Fleet {
  clock: FleetClock;
  s3: S3Model;
  index: IndexStore;
  config: ResolvedConfig;
  cpu: CpuInputs;
  /** One per machine, each shared by its nodes. */
  machines: Cores[];
  live: SweepNode[];
  /** Who lists which shard folder: one memo for every node (the same live set gives the same answer). */
  shardOwners: OwnedShards;
  metrics: NodeMetrics;
  /** Per alarm: PENDING, IN_FLIGHT, DELIVERED; who has it; when it ran; how many times it ran. */
  state: Uint8Array;
  owner: Uint16Array;
  ranAtMs: Float64Array;
  runs: Uint8Array;
  tally: { delivered: number; duplicates: number; dropped: number; failures: number; lastRanMs: number };
  /** Count keys each node lists again, and what their alarm was doing then (`--relisted`, a debug count). */
  relisted?: true;
}

/**
 * What a node's listings were, for `--relisted`: by walk (its own shards', another node's folder,
 * the unsharded layout), each key listed the first time by this node or again, and for keys listed
 * again what their alarm was doing: still pending here (not offered), offered and not yet run here
 * (timer, queue or running), in flight on another node, or run (its entry not deleted yet).
 */
export type Relisting = Record<string, number>;

function walkOf(prefix: string | undefined): string {
  if (prefix === undefined || shardOfKey(FLEET_TENANT, prefix) !== undefined) return 'own shard';
  return prefix === tenantPrefix(FLEET_TENANT) ? 'unsharded' : 'other folder';
}

/** A machine's cores: each job runs on the core free soonest, in the order jobs are given. */
export class Cores {
  private readonly freeAt: number[];
  /** A fraction of a core runs each job that much longer. */
  private readonly slowdown: number;
  busyMs = 0;

  constructor(cores: number) {
    const n = Math.max(1, Math.ceil(cores));
    this.freeAt = Array.from({ length: n }, () => 0);
    this.slowdown = n / cores;
  }

  /** When a job of `ms` given at `atMs` ends. */
  run(atMs: number, ms: number): number {
    let i = 0;
    for (let j = 1; j < this.freeAt.length; j++) if (this.freeAt[j]! < this.freeAt[i]!) i = j;
    const end = Math.max(atMs, this.freeAt[i]!) + ms * this.slowdown;
    this.freeAt[i] = end;
    this.busyMs += ms;
    return end;
  }
}

export class FleetNode implements SweepHost {
  readonly sweeper: Sweeper;
  readonly delivery: AlarmDelivery;
  readonly governor: Governor;
  readonly cores: Cores;
  readonly self: SweepNode;
  /** This node's counts. */
  readonly stats = {
    delivered: 0,
    sweeps: 0,
    lists: 0,
    keysListed: 0,
    sweepCpuMs: 0,
    /** Sweeps that offered entries; of those, the full ones; what they offered, and their time (ms, virtual). */
    offeringSweeps: 0,
    fullSweeps: 0,
    offered: 0,
    sweepMs: 0,
    /** Shard walks that started from their folder's beginning (no cursor: a first walk or a reset). */
    walkStarts: 0,
    /** Deliveries' time summed (ms): ÷ the run's time is the mean in flight (Little's law). */
    deliveringMs: 0,
    /** Time a sweep waited for room in the delivery queue (ms). */
    roomWaitMs: 0,
    /** The highest delivery limit reached, and when the node delivered its last alarm. */
    limitMax: 0,
    lastRanMs: 0,
  };
  /** `--relisted`: how many times this node listed each entry, and the tally by kind. */
  private readonly listedTimes: Uint8Array | undefined;
  readonly relisting: Relisting = {};
  /** `--relisted`: per entry, 0 never offered, 1 offered and taken, 2 offered and refused. */
  private readonly offers: Uint8Array | undefined;
  private liveAtMs = -Infinity;
  private deletes: number[] = [];
  private renewal: { cancel(): void } | undefined;

  constructor(
    readonly idx: number,
    private readonly f: Fleet,
    private readonly random: SeededRandom,
  ) {
    this.self = f.live[idx]!;
    this.listedTimes = f.relisted ? new Uint8Array(f.state.length) : undefined;
    this.offers = f.relisted ? new Uint8Array(f.state.length) : undefined;
    this.cores = f.machines[Math.floor(idx / Math.max(1, f.cpu.nodesPerMachine))]!;
    const { clock, config } = f;
    this.governor = new Governor(config, clock, random.fork());
    const store = this.storeView();
    const scheduler = new ClockScheduler(clock);
    this.sweeper = new Sweeper({ store, clock, random, config, log: silentLogger(), scheduler, shardOwners: f.shardOwners }, this);
    this.delivery = new AlarmDelivery({
      clock,
      config,
      log: silentLogger(),
      metrics: f.metrics,
      deliver: (a, at) => this.deliver(a, at),
      giveBack: async () => undefined,
    });
  }

  start(): void {
    this.sweeper.start();
    this.renew();
  }

  stop(): void {
    this.sweeper.stop();
    this.delivery.stop();
    this.renewal?.cancel();
  }

  // SweepHost

  sweepNode(): SweepNode {
    return this.self;
  }

  async liveNodes(maxAgeMs: number): Promise<SweepNode[]> {
    const now = this.f.clock.now();
    if (now - this.liveAtMs >= maxAgeMs) {
      await this.send('LIST', 'nodes/');
      this.liveAtMs = now;
    }
    return this.f.live;
  }

  isBusy(key: string): boolean {
    if (this.delivery.has(key)) return true;
    const id = idOfKey(key);
    const f = this.f;
    return f.owner[id] === this.idx && f.state[id] !== PENDING && f.clock.now() - f.ranAtMs[id]! < f.config.marginMs;
  }

  offerEntry(address: ActorAddress, dueMs: number): boolean {
    const taken = this.delivery.offer(address, dueMs);
    if (this.offers) this.offers[idOfKey(address.key)] = taken ? 1 : 2;
    return taken;
  }

  deliveryBacklog(): number {
    return this.delivery.backlog();
  }

  async deliveryRoom(): Promise<void> {
    const t0 = this.f.clock.now();
    await this.delivery.sweepRoom(); // as main/node.ts does
    this.stats.roomWaitMs += this.f.clock.now() - t0;
  }

  async tenantsToSweep(): Promise<string[]> {
    return [FLEET_TENANT];
  }

  swept(_tenant: string, r: SweepResult, durationMs: number): void {
    this.stats.sweeps++;
    if (r.offered === 0) return;
    this.stats.offeringSweeps++;
    this.stats.offered += r.offered;
    this.stats.sweepMs += durationMs;
    if (r.full) this.stats.fullSweeps++;
  }

  // The modelled parts

  /** The bucket as the Sweeper sees it: LISTs of the index, after a round trip and the CPU to read the page. */
  private storeView(): ObjectStore {
    const f = this.f;
    const refuse = () => Promise.reject(new Error('the fleet model only lists the index'));
    return {
      description: 'fleet model',
      get: refuse,
      head: refuse,
      put: refuse,
      delete: refuse,
      deleteMany: refuse,
      close: async () => undefined,
      list: async (o: ListOptions): Promise<ListPage> => {
        await this.send('LIST', o.startAfter ?? o.prefix ?? '');
        const page = f.index.list(o);
        const first = page.keys[0];
        const unsharded = first !== undefined && shardOfKey(FLEET_TENANT, first) === undefined;
        const { cpu } = f;
        const ms =
          cpu.listMs + (page.keys.length * cpu.keyUs) / 1000 + (unsharded ? (page.keys.length * f.live.length * cpu.weightNs) / 1e6 : 0);
        this.stats.lists++;
        this.stats.keysListed += page.keys.length;
        if (this.listedTimes) this.tallyRelisted(o.prefix, page.keys);
        if (o.startAfter === undefined && o.prefix !== undefined && shardOfKey(FLEET_TENANT, o.prefix) !== undefined)
          this.stats.walkStarts++;
        this.stats.sweepCpuMs += ms;
        const now = f.clock.now();
        await f.clock.sleep(this.cores.run(now, ms) - now);
        return page;
      },
    };
  }

  private tallyRelisted(prefix: string | undefined, keys: readonly string[]): void {
    const f = this.f;
    const walk = walkOf(prefix);
    for (const key of keys) {
      const id = idOfKey(parseEntryKey(key)!.address.key);
      const times = this.listedTimes![id]!;
      this.listedTimes![id] = Math.min(255, times + 1);
      const state = f.state[id]!;
      const what =
        times === 0
          ? 'first'
          : state === DELIVERED
            ? 'again: run, entry not deleted yet'
            : this.delivery.has(actorKey(id))
              ? 'again: offered, not run yet'
              : state === IN_FLIGHT
                ? 'again: in flight elsewhere'
                : ['again: pending, never offered', 'again: pending, offered before', 'again: pending, offer refused'][this.offers![id]!]!;
      const k = `${walk}, ${what}`;
      this.relisting[k] = (this.relisting[k] ?? 0) + 1;
    }
  }

  /**
   * One request through the node's governor: its round trip, then the bucket admits it or answers
   * 503, which the governor takes as a signal (its class's window halves, backoff, sent again).
   * Rejects with StoreUnavailable when the governor gives up, as a node's store does.
   */
  private send(verb: Verb, key: string | readonly string[]): Promise<void> {
    const f = this.f;
    const keys = typeof key === 'string' ? [key] : key;
    return this.governor.run(
      requestClass(STORE_VERB[verb], keys[0]),
      () => `${verb} ${keys[0]}`,
      async () => {
        await f.clock.sleep(f.s3.latencyMs(verb));
        if (!f.s3.admit(verb, keys, f.clock.now())) throw SLOW_DOWN;
      },
    );
  }

  /** `ms` of CPU on the machine's cores, then each request once the one before it was answered. */
  private async work(ms: number, steps: readonly (readonly [Verb, string])[]): Promise<void> {
    const now = this.f.clock.now();
    await this.f.clock.sleep(this.cores.run(now, ms) - now);
    for (const [verb, key] of steps) await this.send(verb, key);
  }

  private async deliver(a: ActorAddress, dueMs: number): Promise<EventResult | undefined> {
    const f = this.f;
    const id = idOfKey(a.key);
    const now = f.clock.now();
    const hold = `holds/${a.key}`;
    const chain = `state/${a.key}/`;
    const state = f.state[id]!;
    if (state === IN_FLIGHT && f.owner[id] !== this.idx) {
      await this.work(f.cpu.duplicateMs, [
        ['PUT', hold],
        ['GET', hold],
      ]);
      f.tally.dropped++;
      return undefined; // another live node holds it
    }
    if (state === DELIVERED) {
      await this.work(f.cpu.duplicateMs, [
        ['PUT', hold],
        ['LIST', chain],
        ['GET', `${chain}snapshot`],
        ['LIST', actorEntriesPrefix(a, dueMs)],
        ['PUT', hold],
      ]);
      f.tally.duplicates++;
      return { type: 'ok', alarmAt: null, deleted: false, ran: false, removed: 0 };
    }
    f.state[id] = IN_FLIGHT;
    f.owner[id] = this.idx;
    const cpuMs = f.cpu.deliveryMinMs + (f.cpu.deliveryMaxMs - f.cpu.deliveryMinMs) * this.random.float();
    try {
      await this.work(cpuMs, [
        ['PUT', hold],
        ['LIST', chain],
        ['GET', `${chain}snapshot`],
        ['PUT', `${chain}link`],
      ]);
    } catch (e) {
      f.tally.failures++;
      throw e; // the node retries after a lease period
    } finally {
      this.stats.deliveringMs += f.clock.now() - now;
      this.stats.limitMax = Math.max(this.stats.limitMax, this.delivery.concurrency);
    }
    const endMs = f.clock.now();
    f.state[id] = DELIVERED;
    f.ranAtMs[id] = endMs;
    f.runs[id]!++;
    f.tally.delivered++;
    f.tally.lastRanMs = Math.max(f.tally.lastRanMs, endMs);
    this.stats.delivered++;
    this.stats.lastRanMs = endMs;
    this.deleteLater(id);
    this.send('PUT', hold).catch(() => undefined); // the release, not waited for
    return { type: 'ok', alarmAt: null, deleted: false, ran: true };
  }

  /** The delivered entry's DELETE, batched as src/store/delete-batch.ts does (≤ 1,000 keys, ≤ 50 ms). */
  private deleteLater(id: number): void {
    this.deletes.push(id);
    if (this.deletes.length >= 1000) this.flushDeletes();
    else if (this.deletes.length === 1) this.f.clock.setTimer(50, () => this.flushDeletes());
  }

  private flushDeletes(): void {
    const ids = this.deletes;
    if (ids.length === 0) return;
    this.deletes = [];
    const f = this.f;
    this.send(
      'DeleteObjects',
      ids.map((id) => f.index.keyOf(id)),
    ).then(
      () => {
        for (const id of ids) f.index.delete(id);
      },
      () => {
        for (const id of ids) this.deleteLater(id);
      },
    );
  }

  private renew(): void {
    const every = Math.max(1, Math.floor(this.f.config.leasePeriodMs / 3));
    this.renewal = this.f.clock.setTimer(every, () => {
      this.send('PUT', `nodes/${this.self.nodeId}`).catch(() => undefined);
      this.renew();
    });
  }
}

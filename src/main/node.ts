/**
 * One keepwork node (docs/architecture.md); `startNode` (start-node.ts) builds it.
 *
 *   call ─▶ lease valid? ─▶ hold (acquire: mine / elsewhere) ─┬─ elsewhere ─▶ forward to holder
 *                                                              └─ mine ─▶ ActorLanes (one event at a
 *        time per actor) ─▶ WorkerGroup (actor pinned to a worker) ─▶ pipeline ─▶ SQLite + chain
 *   results ─▶ AlarmTimer ─▶ due ─▶ alarm event (same path; an actor held elsewhere: dropped)
 *   RxJS schedules: lease renewal (membership.ts), idle reaping (idle-actors.ts: flush, close, release the hold).
 */
import type { Clock } from '../core/clock.js';
import { parseAddress, type ActorAddress } from '../core/address.js';
import { BadRequest, LeaseLost, NodeStopped, reviveError } from '../core/errors.js';
import { isActorFileHeld } from '../core/file-held.js';
import { isFilesExhausted } from '../core/files-exhausted.js';
import type { Logger } from '../core/logger.js';
import { SystemRandom } from '../core/random.js';
import type { ObjectStore } from '../store/types.js';
import { Sweeper, type SweepHost, type SweepResult } from '../alarms/sweep.js';
import type { SweepNode } from '../alarms/plan-sweep.js';
import type { ActorEvent, EventResult } from '../workers/messages.js';
import { HELD, scanAlarms } from '../workers/scan.js';
import { checkIdempotencyKey } from '../core/idempotency-key.js';
import { actorHandle, type ActorHandle, type ActorShape } from '../core/actor-handle.js';
import { ActorLanes } from './actor-lanes.js';
import { EventRunner, HoldChanged } from './event-runner.js';
import { indexTenants } from '../alarms/index-listing.js';
import type { ResolvedConfig } from '../core/config.js';
import { forwardCall, forwardGetAlarm, type ForwardSettings } from './forward.js';
import { PeerClient } from './peer-client.js';
import type { ClusterKey } from '../core/cluster-signature.js';
import type { PeersAllow } from './peers-allow.js';
import type { Membership } from './membership.js';
import type { NodeMetrics } from './metrics.js';
import { AlarmDelivery } from './alarm-delivery.js';
import { IdleActors } from './idle-actors.js';
import { checkMethod, checkServed, serves, type Served } from './served.js';
import type { BoundHttp, HttpServer, NodeSeams, RoutingNode } from './node-api.js';
import type { WorkerGroup } from './worker-group.js';

const HOLD_ATTEMPTS_MAX = 3;
/** Actor files the start-up scan reads between two turns of the event loop (calls wait at most that long). */
const SCAN_FILES_PER_TURN = 1;

/** What a Node is built from (start-node.ts builds them; the simulator builds its own). */
export interface NodeParts {
  config: ResolvedConfig;
  clock: Clock;
  log: Logger;
  store: ObjectStore;
  workers: WorkerGroup;
  membership: Membership;
  identity: { nodeId: string; epoch: number };
  /** Class name → module URL. */
  classes: Record<string, string>;
  /** Tenants served; all when undefined. */
  tenants: string[] | undefined;
  /** Class name → its method names (served.ts); absent: only the worker checks a method. */
  methods?: Record<string, string[]>;
  metrics: NodeMetrics;
  seams?: NodeSeams;
  /** The data dir's lock (data-dir-lock.ts), given back at the end of a clean stop. */
  dirLock?: { release(): void };
  /** The node's fsync pool (store/fs/fsync-pool.ts): its threads end at the end of a stop. */
  fsyncPool?: { close(): Promise<void> };
  /** The cluster secret: forwards are signed and their replies checked (forward.ts). */
  clusterKey?: ClusterKey;
  /** The networks forwards may go to (peers-allow.ts); absent: any node address. */
  peersAllow?: PeersAllow;
  /** Connections to other nodes (with the node's TLS client settings); default: plain, the system CAs. */
  peers?: PeerClient;
}

export class Node implements RoutingNode, SweepHost {
  readonly nodeId: string;
  /** This run's epoch; a fenced node rejoins under a new one. */
  epoch: number;
  readonly config: ResolvedConfig;
  readonly store: ObjectStore;
  readonly metrics: NodeMetrics;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly workers: WorkerGroup;
  private readonly membership: Membership;
  /** The classes and tenants this node serves (served.ts). */
  private readonly served: Served;
  private readonly lanes: ActorLanes;
  private readonly runner: EventRunner;
  private delivery: AlarmDelivery;
  private readonly idle: IdleActors;
  private readonly forwarding: ForwardSettings;
  private http: HttpServer | undefined;
  private stopping = false;
  /** Fenced: another node took this node's actors; it sweeps, delivers and serves nothing until it has rejoined. */
  private isFenced = false;
  private rejoining: Promise<void> | undefined;
  /** Where the timer is refilled from (at start, and after a rejoin). */
  private dataDir: string | undefined;
  private readonly dirLock: { release(): void } | undefined;
  private readonly fsyncPool: { close(): Promise<void> } | undefined;
  private readonly onRejoin: ((epoch: number) => void) | undefined;
  private readonly sweeper: Sweeper;

  constructor(parts: NodeParts) {
    const { config, clock, log, store, seams = {} } = parts;
    ({ nodeId: this.nodeId, epoch: this.epoch } = parts.identity);
    this.config = config;
    this.clock = clock;
    this.log = log;
    this.store = store;
    this.workers = parts.workers;
    this.membership = parts.membership;
    this.served = { classes: parts.classes, tenants: parts.tenants, ...(parts.methods ? { methods: parts.methods } : {}) };
    this.metrics = parts.metrics;
    this.dirLock = parts.dirLock;
    this.fsyncPool = parts.fsyncPool;
    this.onRejoin = seams.onRejoin;
    this.lanes = new ActorLanes(config.actorQueueMax);
    this.delivery = this.newDelivery();
    const random = seams.random ?? new SystemRandom();
    const sweepLog = log.child({ component: 'sweep' });
    this.sweeper = new Sweeper({ store, clock, random, scheduler: seams.scheduler, config, log: sweepLog, rules: seams.rules }, this);
    const client = parts.peers ?? new PeerClient({}, config.httpResultMaxBytes);
    const forwarding = { client, timeoutMs: config.forwardTimeoutMs, hopsMax: config.forwardHopsMax, cluster: parts.clusterKey };
    this.forwarding = { ...forwarding, nowMs: () => clock.now(), peersAllow: parts.peersAllow, log };
    const { lanes, workers, membership } = this;
    const idle = { clock, config, log, lanes, workers, holds: membership.holds, scheduler: seams.scheduler, stopping: () => this.stopping };
    this.idle = new IdleActors(idle);
    this.runner = new EventRunner({
      clock,
      config,
      log,
      lanes,
      workers,
      holds: membership.holds,
      used: (address) => this.idle.used(address),
      learned: (address, event, r) => {
        if (event.type !== 'getAlarm' && !(r.type === 'ok' && r.retryAtMs !== undefined)) this.delivery.set(address, r.alarmAt);
        if (r.type === 'ok' && r.deleted) this.delivery.clear(address);
        if (r.type === 'ok' && r.closed) this.idle.closed(address);
      },
    });
  }

  get url(): string | undefined {
    return this.http?.url;
  }

  actor<D extends ActorShape = ActorShape>(input: string | { tenant: string; className: string; name: string }): ActorHandle<D> {
    const address = checkServed(this.served, parseAddress(input));
    return actorHandle<D>(address, {
      request: (method, args, durable, idempotencyKey) => this.request(address, method, args, durable, 0, idempotencyKey),
      readAlarm: () => this.readAlarm(address, 0),
      checkIdempotencyKey,
    });
  }

  pendingAlarms(): number {
    return this.delivery.size;
  }

  heldActors(): number {
    return this.membership.holds.heldCount();
  }

  deliveryBacklog(): number {
    return this.delivery.backlog();
  }

  /**
   * Refills the timer from the data dir's actor databases (workers/scan.ts). With `filesPerTurn`
   * the scan gives the event loop a turn after that many files, so the node serves while it scans
   * a large data dir; each file's alarm is read and set in one turn, so a call that changes an
   * alarm meanwhile (its reply sets the timer after its commit) is never undone by an older read.
   * Unbounded (the default), the whole scan runs before this returns its promise.
   */
  async refillTimer(dataDir: string, filesPerTurn = Infinity): Promise<void> {
    this.dataDir = dataDir;
    const delivery = this.delivery;
    let n = 0;
    let files = 0;
    let held = 0;
    for (const found of scanAlarms(dataDir, (path, e) => this.log.error({ path, err: e }, 'cannot read actor database at start'))) {
      if (this.stopping || delivery !== this.delivery) return; // stopped, or fenced and rejoined: that run scans again
      if (found === HELD) held++;
      else if (found && serves(this.served, found.address)) {
        delivery.set(found.address, found.at);
        n++;
      }
      if (++files % filesPerTurn === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.log.info({ alarms: n, files, held }, 'timer refilled from the data dir');
  }

  /**
   * The timer refilled while the node serves (a node's start, a rejoin): SCAN_FILES_PER_TURN
   * files a turn. A scan that fails is logged; the sweep still finds every indexed alarm.
   */
  refill(dataDir: string): Promise<void> {
    return this.refillTimer(dataDir, SCAN_FILES_PER_TURN).catch((e: unknown) =>
      this.log.error({ err: e, dataDir }, 'refilling the timer from the data dir failed'),
    );
  }

  startSweeping(): void {
    this.sweeper.start();
  }

  // The node as its sweep sees it (alarms/sweep.ts SweepHost).

  sweepNode(): SweepNode {
    return { nodeId: this.nodeId, tenants: this.served.tenants ?? null, classes: Object.keys(this.served.classes) };
  }

  async liveNodes(maxAgeMs: number): Promise<SweepNode[]> {
    return (await this.membership.nodes.live(maxAgeMs)).map((r) => ({ nodeId: r.nodeId, tenants: r.tenants, classes: r.classes }));
  }

  /**
   * Actors the sweep leaves alone: in the timer, running, or with a delivery queued — and those
   * this node ran an event for within the last margin. Such an actor's committed alarm is in this
   * node's timer, and its other entries are stale ones whose DELETE follows this node's next
   * upload; offering them again (the sweep rereads the index from the start while those DELETEs are
   * in flight) only costs a LIST and a HEAD each, and a drain would spend them on a share of its
   * deliveries (bench/drain-profile.ts counts them). After a margin the sweep offers them again (a
   * DELETE that failed, or a timer that was full).
   */
  isBusy(key: string): boolean {
    if (this.delivery.has(key) || this.lanes.has(key)) return true;
    return this.idle.usedWithin(key, this.config.marginMs);
  }

  /**
   * An index entry the sweep found overdue: delivered through the timer (its backoff horizon
   * applies). `generation`: the entry's tag's, the hold the delivery expects to find (holds.ts).
   */
  offerEntry(address: ActorAddress, dueMs: number, generation?: number, shard?: number): boolean {
    if (this.stopping || this.isFenced || !serves(this.served, address)) return false;
    if (!this.delivery.offer(address, dueMs, shard)) return false;
    if (generation !== undefined) this.membership.holds.expect(address, generation);
    return true;
  }

  deliveryRoom(): Promise<void> {
    return this.delivery.sweepRoom();
  }

  async tenantsToSweep(): Promise<string[]> {
    return this.served.tenants ?? (await indexTenants(this.store));
  }

  swept(tenant: string, r: SweepResult, ms: number): void {
    this.metrics.observeSweep(tenant, r, ms, this.clock.now());
  }

  async metricsText(): Promise<string> {
    this.metrics.pendingAlarms.set(this.delivery.size);
    this.metrics.heldActors.set(this.membership.holds.heldCount());
    this.metrics.countHoldTakes(this.membership.holds.takes);
    this.metrics.deliveryBacklog.set(this.deliveryBacklog());
    this.metrics.deliveryConcurrency.set(this.delivery.concurrency);
    this.metrics.deliveriesRunning.set(this.delivery.running);
    this.metrics.releaseBacklog.set(this.idle.backlog());
    return this.metrics.registry.metrics();
  }

  private newDelivery(): AlarmDelivery {
    return new AlarmDelivery({
      clock: this.clock,
      config: this.config,
      log: this.log,
      metrics: this.metrics,
      deliver: (address, dueMs, shard) => this.deliver(address, dueMs, shard),
      giveBack: (address) => this.idle.giveBack(address),
      actorRoom: () => this.idle.room(),
    });
  }

  /** Serves the node's API on `http`, bound before the node joined (its url is already in the lease). */
  serveHttp(http: BoundHttp): void {
    http.serve(this, this.log);
    this.http = http;
  }

  async request(
    address: ActorAddress,
    method: string,
    args: unknown[],
    durable: boolean,
    hops: number,
    idempotencyKey?: string,
    caller = '',
  ): Promise<unknown> {
    checkServed(this.served, address);
    checkMethod(this.served, address, method);
    const once = idempotencyKey === undefined ? {} : { idempotencyKey: checkIdempotencyKey(idempotencyKey) };
    if (idempotencyKey !== undefined && !durable)
      throw new BadRequest('an idempotency key needs a durable call (callDurable, or ?durable=1)');
    return this.withHold(
      address,
      (own) => forwardCall(own.addr, address, method, args, durable, { hops, caller }, this.forwarding, idempotencyKey),
      async (generation) => {
        const r = await this.submit(address, { type: 'request', address, method, args, durable, generation, ...once });
        if (r.type === 'error') throw reviveError(r.error);
        return r.result;
      },
    );
  }

  async readAlarm(address: ActorAddress, hops: number, caller = ''): Promise<number | null> {
    checkServed(this.served, address);
    return this.withHold(
      address,
      (own) => forwardGetAlarm(own.addr, address, { hops, caller }, this.forwarding),
      async (generation) => (await this.submit(address, { type: 'getAlarm', address, generation })).alarmAt,
      () => null, // never created: no alarm, and no hold taken to say so
    );
  }

  /**
   * Acquires the actor (or learns its holder) and runs `mine` under the generation held. An event
   * that finds the hold changed once it reaches the actor's lane (released idle or given back
   * meanwhile) acquires again, a bounded number of times, instead of failing the caller. With
   * `absent`, an actor that was never created is not created: `absent` answers.
   */
  private async withHold<T>(
    address: ActorAddress,
    elsewhere: (own: { nodeId: string; addr: string }) => Promise<T>,
    mine: (generation: number) => Promise<T>,
    absent?: () => T,
  ): Promise<T> {
    try {
      return await this.holding(address, elsewhere, mine, absent);
    } catch (e) {
      this.noteOpenFailure(e);
      throw e;
    }
  }

  /** withHold's loop; an error for want of file descriptors (the hold's bucket I/O, the worker's open) is noted on the way out. */
  private async holding<T>(
    address: ActorAddress,
    elsewhere: (own: { nodeId: string; addr: string }) => Promise<T>,
    mine: (generation: number) => Promise<T>,
    absent?: () => T,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const own = await this.own(address, absent === undefined);
      if (own.kind === 'none') return absent!();
      if (own.kind === 'elsewhere') return elsewhere(own);
      try {
        return await mine(own.generation);
      } catch (e) {
        if (!(e instanceof HoldChanged) || attempt >= HOLD_ATTEMPTS_MAX) throw e;
      }
    }
  }

  /** Clean handover: stop taking work, finish replication, release every hold, release the lease. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.idle.stop();
    this.sweeper.stop();
    this.delivery.stop();
    await this.rejoining;
    await this.delivery.drained();
    await this.http?.close();
    this.forwarding.client.close();
    await this.lanes.drained();
    await this.workers.broadcast({ type: 'closeAll' }).catch((e: unknown) => this.log.error({ err: e }, 'flushing actors at stop failed'));
    await this.membership.holds.releaseAll();
    await this.membership.stop();
    await this.workers.destroy();
    await this.store.close();
    await this.fsyncPool?.close();
    this.dirLock?.release();
    this.log.info('node stopped');
  }

  /**
   * The lease was fenced: every actor stops at once (nothing more can be uploaded anyway), and so
   * do the sweep and the timer — another node owns this node's alarms now. Calls are answered
   * LEASE_LOST meanwhile. Then the node rejoins by itself under a new epoch (`rejoin`).
   */
  fenced(): void {
    if (this.isFenced || this.stopping) return;
    this.isFenced = true;
    this.metrics.fenced.set(1);
    this.sweeper.stop();
    this.delivery.stop();
    this.idle.forgetAll();
    this.log.warn('sweeping and alarm delivery stopped: this node was fenced; it rejoins under a new epoch');
    this.rejoining = this.rejoin().finally(() => (this.rejoining = undefined));
  }

  /**
   * A fenced node's way back: once nothing of the fenced epoch runs any more (its deliveries and
   * events ended, every worker's actors dropped), it writes its lease live under a new epoch
   * (retrying while the bucket is out of reach), holds nothing, refills its timer from its data
   * dir and sweeps again. Its actors' old replicas never write again (their epoch is over); the
   * actors are taken anew, generation + 1, at their next event.
   */
  private async rejoin(): Promise<void> {
    const fencedEpoch = this.epoch;
    await this.delivery.drained();
    await this.lanes.drained();
    await this.workers
      .broadcast({ type: 'dropAll' })
      .catch((e: unknown) => this.log.warn({ err: e }, 'dropping actors after the fence failed'));
    const epoch = await this.membership.rejoin(
      () => this.fenced(),
      () => this.stopping,
    );
    if (epoch === undefined || this.stopping) return;
    this.epoch = epoch;
    if (this.stopping) return;
    this.delivery = this.newDelivery();
    if (this.dataDir !== undefined) void this.refill(this.dataDir);
    this.isFenced = false;
    this.metrics.fenced.set(0);
    this.metrics.rejoins.inc();
    this.sweeper.start();
    this.log.warn({ fencedEpoch, epoch: this.epoch }, 'rejoined the cluster under a new epoch after a fence');
    this.onRejoin?.(this.epoch);
  }

  private own(address: ActorAddress, create: boolean) {
    if (this.stopping) throw new NodeStopped(`node ${this.nodeId} is stopping`);
    if (this.isFenced) throw new LeaseLost(`node ${this.nodeId} was fenced and is rejoining under a new epoch; retry`);
    return this.membership.holds.acquire(address, { create });
  }

  /** An event that could not open its actor (out of file descriptors, or the file held): the node's health says so for a while. */
  private noteOpenFailure(e: unknown): void {
    if (isFilesExhausted(e)) this.metrics.feed.outOfFiles(e.message, this.clock.now());
    else if (isActorFileHeld(e)) this.metrics.feed.fileHeld(e.message, this.clock.now());
  }

  /** Runs one event through the actor's lane and worker (event-runner.ts). */
  private submit(address: ActorAddress, event: ActorEvent): Promise<EventResult> {
    if (this.stopping) return Promise.reject(new NodeStopped(`node ${this.nodeId} is stopping`));
    return this.runner.submit(address, event).then((r) => {
      if (r.type === 'error') this.noteOpenFailure(r.error);
      return r; // a delivery's outcome; a call's error is noted by withHold too (the same moment, kept once)
    });
  }

  /** One alarm delivery (alarm-delivery.ts): the actor's event at `dueMs`, or undefined when another live node holds it. */
  private deliver(address: ActorAddress, dueMs: number, shard?: number): Promise<EventResult | undefined> {
    return this.withHold(
      address,
      async (own) => {
        this.log.info({ actor: address.key, holder: own.nodeId }, 'alarm dropped: another live node holds the actor and has it');
        return undefined;
      },
      (generation) => {
        this.metrics.tardiness.observe(Math.max(0, this.clock.now() - dueMs) / 1000);
        return this.submit(
          address,
          shard === undefined ? { type: 'deliver', address, dueMs, generation } : { type: 'deliver', address, dueMs, generation, shard },
        );
      },
    );
  }
}

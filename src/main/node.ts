/**
 * `startNode`: the composition root of one keepwork node (DESIGN.md §5, §7, §8).
 *
 *   call ─▶ lease valid? ─▶ hold (acquire: mine / elsewhere) ─┬─ elsewhere ─▶ forward to holder
 *                                                              └─ mine ─▶ ActorLanes (one event at a
 *        time per actor) ─▶ WorkerGroup (actor pinned to a worker) ─▶ pipeline ─▶ SQLite + chain
 *   results ─▶ AlarmTimer ─▶ due ─▶ alarm event (same path; an actor held elsewhere: dropped)
 *   RxJS schedules: lease renewal (membership.ts), idle reaping (flush, close, release the hold).
 */
import { interval, type Subscription } from 'rxjs';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { SystemClock, type Clock } from '../core/clock.js';
import { formatAddress, parseAddress, validateTenant, type ActorAddress } from '../core/address.js';
import { NodeStopped, NotFound, reviveError } from '../core/errors.js';
import { createLogger, type Logger } from '../core/logger.js';
import { SystemRandom } from '../core/random.js';
import { AlarmTimer } from '../alarms/timer.js';
import { openStore, DEFAULT_BUCKET_URL } from '../store/open.js';
import type { ObjectStore } from '../store/types.js';
import type { ActorEvent, EventResult } from '../workers/messages.js';
import { scanAlarms } from '../workers/scan.js';
import { ActorLanes } from './actor-lanes.js';
import { resolveClasses } from './classes.js';
import { resolveOptions, type KeepworkOptions, type ResolvedConfig } from './config.js';
import { forwardCall, forwardGetAlarm, type ForwardSettings } from './forward.js';
import { startHttp, type HttpServer } from './http.js';
import { nextIdentity } from './identity.js';
import { Membership } from './membership.js';
import { WorkerGroup } from './worker-group.js';
import PQueue from 'p-queue';
import { Sweeper, type SweepResult } from '../streams/sweep.js';
import { NodeMetrics } from './metrics.js';
import { countingStore } from '../store/counting.js';
import { indexTenants } from './alarms-command.js';

export interface StartNodeOptions extends KeepworkOptions {
  /** Class name → module path or file URL whose default export is `defineActor(...)`. */
  classes: Record<string, string>;
  /** Bucket URL (file://, a path, s3://, memory:). Default: file://./data/bucket. */
  bucket?: string;
  /** Where actor databases and node.json live. Default: ./data. */
  dataDir?: string;
  /** Tenants this node serves; all when absent. */
  tenants?: string[];
  nodeId?: string;
  /** HTTP port; 0 picks a free one; no HTTP server when absent (then no node can forward to it). */
  port?: number;
  host?: string;
  logger?: Logger;
}

export interface ActorHandle {
  readonly address: ActorAddress;
  call<T = unknown>(method: string, ...args: unknown[]): Promise<T>;
  callDurable<T = unknown>(method: string, ...args: unknown[]): Promise<T>;
  getAlarm(): Promise<number | null>;
}

export interface KeepworkNode {
  readonly nodeId: string;
  readonly epoch: number;
  /** The HTTP base URL, when serving HTTP. */
  readonly url: string | undefined;
  readonly config: ResolvedConfig;
  readonly store: ObjectStore;
  actor(address: string | { tenant: string; className: string; name: string }): ActorHandle;
  /** Pending alarms in this node's timer. */
  pendingAlarms(): number;
  /** Actors this node holds. */
  heldActors(): number;
  stop(): Promise<void>;
}

/** What the HTTP layer and the sweep need beyond the public node. */
export interface RoutingNode extends KeepworkNode {
  /** Prometheus text of this node's metrics. */
  metricsText(): Promise<string>;
  /** An index entry the sweep found overdue: delivered through the timer (its backoff horizon applies). */
  offerEntry(address: ActorAddress, dueMs: number): boolean;
  request(address: ActorAddress, method: string, args: unknown[], durable: boolean, hops: number): Promise<unknown>;
  readAlarm(address: ActorAddress, hops: number): Promise<number | null>;
}

export async function startNode(options: StartNodeOptions): Promise<KeepworkNode> {
  const { classes, bucket, dataDir: dir, tenants, nodeId, port, host, logger, ...tunables } = options;
  const config = resolveOptions(tunables);
  const classUrls = resolveClasses(classes);
  const served = tenants?.map(validateTenant);
  const dataDir = resolve(dir ?? './data');
  mkdirSync(dataDir, { recursive: true });
  const clock: Clock = new SystemClock();
  const identity = nextIdentity(dataDir, new SystemRandom(), nodeId);
  const bucketUrl = bucket ?? DEFAULT_BUCKET_URL;
  const metrics = new NodeMetrics();
  const store = countingStore(openStore(bucketUrl, { config, clock }), (op) => metrics.storeRequests.inc({ op }));
  const baseLog = logger ?? createLogger();
  const membership = new Membership(store, clock, config, baseLog.child({ nodeId: identity.nodeId }), {
    nodeId: identity.nodeId,
    addr: '',
    tenants: served ?? null,
    classes: Object.keys(classUrls),
  });
  let node: Node | undefined;
  const epoch = await membership.start(identity.epoch, () => node?.fenced());
  const log = baseLog.child({ nodeId: identity.nodeId, epoch });
  const workers = new WorkerGroup(config, {
    dataDir,
    bucket: bucketUrl,
    classes: classUrls,
    options: tunables,
    logLevel: log.level,
    nodeId: identity.nodeId,
    epoch,
    leaseValidUntil: membership.shared,
    storeCounts: metrics.workerStoreCounts.buffer,
  });
  node = new Node(config, clock, log, store, workers, membership, { nodeId: identity.nodeId, epoch }, classUrls, served, metrics);
  try {
    node.refillTimer(dataDir);
    if (port !== undefined) await node.serveHttp(port, host ?? '127.0.0.1');
    node.startSweeping();
  } catch (e) {
    await node.stop();
    throw e;
  }
  log.info({ dataDir, bucket: store.description, classes: Object.keys(classUrls), workers: workers.size, url: node.url }, 'node started');
  return node;
}

class Node implements RoutingNode {
  readonly nodeId: string;
  readonly epoch: number;
  private readonly lanes: ActorLanes;
  private readonly timer: AlarmTimer;
  private readonly lastUsed = new Map<string, { address: ActorAddress; at: number }>();
  private readonly reaper: Subscription;
  private readonly forwarding: ForwardSettings;
  private http: HttpServer | undefined;
  private stopping = false;
  private readonly deliveries: PQueue;
  /** Actors with a delivery queued or running (the sweep does not offer them again). */
  private readonly delivering = new Set<string>();
  private readonly sweeper: Sweeper;

  constructor(
    readonly config: ResolvedConfig,
    private readonly clock: Clock,
    private readonly log: Logger,
    readonly store: ObjectStore,
    private readonly workers: WorkerGroup,
    private readonly membership: Membership,
    identity: { nodeId: string; epoch: number },
    private readonly classes: Record<string, string>,
    private readonly tenants: string[] | undefined,
    readonly metrics: NodeMetrics,
  ) {
    this.nodeId = identity.nodeId;
    this.epoch = identity.epoch;
    this.lanes = new ActorLanes(config.actorQueueMax);
    this.deliveries = new PQueue({ concurrency: config.deliveryConcurrency });
    this.timer = new AlarmTimer(clock, (key, at) => this.queueDelivery(key, at), config.timerEntriesMax);
    this.sweeper = new Sweeper({
      store,
      clock,
      random: new SystemRandom(),
      config,
      log: log.child({ component: 'sweep' }),
      self: () => ({ nodeId: this.nodeId, tenants: this.tenants ?? null, classes: Object.keys(this.classes) }),
      live: async (maxAgeMs) => (await this.membership.nodes.live(maxAgeMs)).map((r) => ({ nodeId: r.nodeId, tenants: r.tenants, classes: r.classes })),
      busy: { has: (actor) => this.timer.get(actor) !== undefined || this.lanes.has(actor) || this.delivering.has(actor) },
      offer: (address, dueMs) => this.offerEntry(address, dueMs),
      backlog: () => this.deliveries.size + this.deliveries.pending,
      tenants: async () => this.tenants ?? (await indexTenants(store)),
      observe: (tenant, r, ms) => this.observeSweep(tenant, r, ms),
    });
    this.forwarding = { timeoutMs: config.forwardTimeoutMs, hopsMax: config.forwardHopsMax };
    const reapEveryMs = Math.max(100, Math.min(config.idleTimeoutMs / 4, 10_000));
    this.reaper = interval(reapEveryMs).subscribe(() => void this.reapIdle());
  }

  get url(): string | undefined {
    return this.http?.url;
  }

  actor(input: string | { tenant: string; className: string; name: string }): ActorHandle {
    const address = this.checkServed(parseAddress(input));
    return {
      address,
      call: (method, ...args) => this.request(address, method, args, false, 0) as never,
      callDurable: (method, ...args) => this.request(address, method, args, true, 0) as never,
      getAlarm: () => this.readAlarm(address, 0),
    };
  }

  pendingAlarms(): number {
    return this.timer.size;
  }

  offerEntry(address: ActorAddress, dueMs: number): boolean {
    if (this.stopping || !this.serves(address)) return false;
    return this.timer.offer(formatAddress(address), dueMs, this.config.retryMaxMs);
  }

  heldActors(): number {
    return this.membership.holds.heldCount();
  }

  refillTimer(dataDir: string): void {
    let n = 0;
    for (const { address, at } of scanAlarms(dataDir, (path, e) => this.log.error({ path, err: e }, 'cannot read actor database at start'))) {
      if (!this.serves(address)) continue;
      this.timer.set(formatAddress(address), at);
      n++;
    }
    this.log.info({ alarms: n }, 'timer refilled from the data dir');
  }

  startSweeping(): void {
    this.sweeper.start();
  }

  async metricsText(): Promise<string> {
    this.metrics.pendingAlarms.set(this.timer.size);
    this.metrics.heldActors.set(this.membership.holds.heldCount());
    this.metrics.deliveryBacklog.set(this.deliveries.size + this.deliveries.pending);
    return this.metrics.registry.metrics();
  }

  private observeSweep(tenant: string, r: SweepResult, ms: number): void {
    this.metrics.sweepDuration.observe({ tenant }, ms / 1000);
    this.metrics.sweepRead.inc({ tenant }, r.read);
    this.metrics.sweepOffered.inc({ tenant }, r.offered);
    const lag = r.oldestDueMs === undefined ? 0 : Math.max(0, (this.clock.now() - r.oldestDueMs) / 1000);
    this.metrics.indexLag.set({ tenant }, lag);
  }

  /** The timer fired: into the bounded delivery queue (full: the timer holds it a second longer). */
  private queueDelivery(key: string, at: number): void {
    if (this.stopping) return;
    if (this.deliveries.size >= this.config.deliveriesPerSweep) {
      this.timer.set(key, this.clock.now() + 1_000);
      return;
    }
    this.delivering.add(key);
    void this.deliveries.add(() => this.deliverAlarm(key, at).finally(() => this.delivering.delete(key)));
  }

  async serveHttp(port: number, host: string): Promise<void> {
    this.http = await startHttp(this, { port, host, bodyMaxBytes: this.config.httpBodyMaxBytes, log: this.log });
    this.membership.lease.setAddr(this.http.url);
    await this.membership.renew(() => this.fenced());
  }

  async request(address: ActorAddress, method: string, args: unknown[], durable: boolean, hops: number): Promise<unknown> {
    this.checkServed(address);
    const own = await this.own(address);
    if (own.kind === 'elsewhere') return forwardCall(own.addr, address, method, args, durable, hops, this.forwarding);
    const r = await this.submit(address, { type: 'request', address, method, args, durable, generation: own.generation });
    if (r.type === 'error') throw reviveError(r.error);
    return r.result;
  }

  async readAlarm(address: ActorAddress, hops: number): Promise<number | null> {
    this.checkServed(address);
    const own = await this.own(address);
    if (own.kind === 'elsewhere') return forwardGetAlarm(own.addr, address, hops, this.forwarding);
    return (await this.submit(address, { type: 'getAlarm', address, generation: own.generation })).alarmAt;
  }

  /** Clean handover: stop taking work, finish replication, release every hold, release the lease. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.reaper.unsubscribe();
    this.sweeper.stop();
    this.timer.stop();
    this.deliveries.clear();
    await this.deliveries.onIdle();
    await this.http?.close();
    await this.lanes.drained();
    await this.workers.broadcast({ type: 'closeAll' }).catch((e: unknown) => this.log.error({ err: e }, 'flushing actors at stop failed'));
    await this.membership.holds.releaseAll();
    await this.membership.stop();
    await this.workers.destroy();
    await this.store.close();
    this.log.info('node stopped');
  }

  /** The lease was fenced: every actor stops at once (nothing more can be uploaded anyway). */
  fenced(): void {
    this.lastUsed.clear();
    void this.workers.broadcast({ type: 'dropAll' }).catch(() => undefined);
  }

  private own(address: ActorAddress) {
    if (this.stopping) throw new NodeStopped(`node ${this.nodeId} is stopping`);
    return this.membership.holds.acquire(address);
  }

  /** Runs one event through the actor's lane and worker; the committed alarm feeds the timer. */
  private submit(address: ActorAddress, event: ActorEvent): Promise<EventResult> {
    if (this.stopping) return Promise.reject(new NodeStopped(`node ${this.nodeId} is stopping`));
    const key = formatAddress(address);
    return this.lanes.run(key, async () => {
      this.lastUsed.set(key, { address, at: this.clock.now() });
      const r = await this.runWithHardLimit(event);
      if (event.type !== 'getAlarm' && !(r.type === 'ok' && r.retryAtMs !== undefined)) this.timer.set(key, r.alarmAt);
      if (r.type === 'ok' && r.deleted) this.timer.clear(key);
      return r;
    });
  }

  /** A handler stuck in synchronous code cannot see its time limit: abort the task (ends the thread). */
  private async runWithHardLimit(event: ActorEvent): Promise<EventResult> {
    const ac = new AbortController();
    const t = this.clock.setTimer(this.config.handlerTimeoutMs + 5_000, () => ac.abort());
    try {
      return await this.workers.run(event, ac.signal);
    } catch (e) {
      if (!ac.signal.aborted || event.type !== 'alarm') throw e;
      this.log.warn({ actor: formatAddress(event.address) }, 'alarm handler stuck past its time limit; worker restarted');
      return this.workers.run({ ...event, recordFailure: true });
    } finally {
      t.cancel();
    }
  }

  /**
   * The timer fired for `key` at `at` (its own committed alarm, or an entry the sweep offered):
   * the ordinary delivery — run the alarm if `at` is the committed one, else clean up stale
   * entries at `at`. An actor held by another live node: dropped (the owner has it).
   */
  private async deliverAlarm(key: string, at: number): Promise<void> {
    const address = parseAddress(key);
    try {
      const own = await this.own(address);
      if (own.kind === 'elsewhere') {
        this.log.info({ actor: key, holder: own.nodeId }, 'alarm dropped: another live node holds the actor and has it');
        return;
      }
      this.metrics.tardiness.observe(Math.max(0, this.clock.now() - at) / 1000);
      const r = await this.submit(address, { type: 'deliver', address, dueMs: at, generation: own.generation });
      this.metrics.deliveries.inc({ outcome: r.type === 'error' ? 'failed' : r.ran ? 'ran' : r.removed ? 'stale' : 'kept' });
      if (r.type === 'ok' && r.removed) this.metrics.staleRemoved.inc(r.removed);
      if (r.type === 'ok' && r.retryAtMs !== undefined) this.timer.set(key, r.retryAtMs);
      if (r.type === 'ok' && r.releaseHold) await this.giveBack(address);
    } catch (e) {
      if (this.stopping) return;
      const retryAt = this.clock.now() + this.config.leasePeriodMs;
      this.log.error({ actor: key, err: e, retryAt }, 'alarm delivery failed; trying again after a lease period');
      this.timer.set(key, retryAt);
    }
  }

  /** Closes the actor and releases its hold at once (the empty-bucket rule). */
  private async giveBack(address: ActorAddress): Promise<void> {
    const key = formatAddress(address);
    this.lastUsed.delete(key);
    await this.lanes.run(key, () => this.workers.run({ type: 'close', address }));
    await this.releaseHold(address);
  }

  private async reapIdle(): Promise<void> {
    const cutoff = this.clock.now() - this.config.idleTimeoutMs;
    for (const [key, { address, at }] of this.lastUsed) {
      if (at > cutoff || this.stopping) continue;
      this.lastUsed.delete(key);
      try {
        await this.lanes.run(key, () => this.workers.run({ type: 'close', address }));
        await this.releaseHold(address);
      } catch (e) {
        this.log.warn({ actor: key, err: e }, 'closing an idle actor failed');
      }
    }
  }

  private async releaseHold(address: ActorAddress): Promise<void> {
    await this.membership.holds.release(address).catch((e: unknown) => this.log.warn({ actor: formatAddress(address), err: e }, 'releasing a hold failed'));
  }

  private serves(address: ActorAddress): boolean {
    return Object.prototype.hasOwnProperty.call(this.classes, address.className) && (!this.tenants || this.tenants.includes(address.tenant));
  }

  private checkServed(address: ActorAddress): ActorAddress {
    if (!Object.prototype.hasOwnProperty.call(this.classes, address.className)) throw new NotFound(`this node serves no actor class ${JSON.stringify(address.className)}`);
    if (this.tenants && !this.tenants.includes(address.tenant)) throw new NotFound(`this node does not serve tenant ${JSON.stringify(address.tenant)}`);
    return address;
  }
}

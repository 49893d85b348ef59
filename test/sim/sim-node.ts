/**
 * One simulated node: an instance of the real node core (`Node` from src/main/node.ts, with its
 * Membership, HoldTable, AlarmTimer, Sweeper and ActorLanes) wired to the simulator's seams —
 * its own NodeClock on the shared virtual time, a NodeLink to the shared bucket, a seeded
 * Random, a Clock-driven RxJS scheduler — with the event pipeline (`runEvent`) run inline in
 * place of the Piscina workers, exactly as test/helpers/inline-actors.ts does.
 *
 *   start()  identity (epoch + 1) ─▶ lease (a live one of its dead predecessor here: fenced at
 *            once) ─▶ Node ─▶ timer refilled from the data dir ─▶ sweeping; once fenced, the Node
 *            rejoins by itself under a new epoch (the real path)
 *   crash()  the process is gone: timers cancelled, replies never heard, open transactions rolled
 *            back (SQLite's own recovery); database handles stay open (closing one would fold
 *            its WAL into the file, which a crash does not do)
 *   stop()   the clean handover (Node.stop: flush, release holds and lease)
 */
import type { Clock, SimClock } from '../../src/core/clock.js';
import { createLogger, silentLogger } from '../../src/core/logger.js';
import type { SeededRandom } from '../../src/core/random.js';
import { NonceSource } from '../../src/alarms/keys.js';
import type { ProtocolRules } from '../../src/alarms/rules.js';
import { resolveOptions, type KeepworkOptions, type ResolvedConfig } from '../../src/core/config.js';
import { nextIdentity } from '../../src/main/identity.js';
import { Membership } from '../../src/main/membership.js';
import { NodeMetrics } from '../../src/main/metrics.js';
import { Node } from '../../src/main/node.js';
import type { RunOutcome, WorkerGroup } from '../../src/main/worker-group.js';
import { ClockScheduler } from '../../src/core/clock-scheduler.js';
import { DeleteBatcher } from '../../src/store/delete-batch.js';
import { UploadPace } from '../../src/replication/upload-pace.js';
import { ActorSlots, slotsSettings } from '../../src/workers/actor-slots.js';
import type { Db } from '../../src/workers/actor-db.js';
import type { ActorDefinition } from '../../src/workers/define-actor.js';
import type { ActorEvent } from '../../src/workers/messages.js';
import { runEvent } from '../../src/workers/pipeline.js';
import { runBatch } from '../../src/workers/batch.js';
import type { PipelineDeps } from '../../src/workers/deps.js';
import type { Network } from './network.js';
import { NodeClock } from './node-clock.js';

let sharedMetrics: NodeMetrics | undefined;

export interface SimNodeSetup {
  nodeId: string;
  dataDir: string;
  options: KeepworkOptions;
  className: string;
  /** The actor class as this node runs it (its handlers may wait on the node's own clock). */
  definition: (clock: Clock) => ActorDefinition;
  /** The protocol rules its pipeline obeys (SAFE_RULES but in an unsafe variant). */
  rules: ProtocolRules;
}

export class SimNode {
  readonly clock: NodeClock;
  readonly config: ResolvedConfig;
  node: Node | undefined;
  membership: Membership | undefined;
  epoch = 0;
  /** Times this node rejoined by itself after a fence (Node.rejoin). */
  rejoins = 0;
  private slots: ActorSlots | undefined;

  constructor(
    readonly setup: SimNodeSetup,
    base: SimClock,
    private readonly net: Network,
    private readonly random: SeededRandom,
  ) {
    this.clock = new NodeClock(base);
    this.config = resolveOptions(setup.options);
  }

  get nodeId(): string {
    return this.setup.nodeId;
  }

  get up(): boolean {
    return this.node !== undefined && !this.clock.isDead;
  }

  async start(): Promise<void> {
    const { nodeId, dataDir, className, definition, rules } = this.setup;
    const actorClass = definition(this.clock);
    const store = this.net.link(nodeId, this.clock);
    const log = process.env.SIM_LOG === nodeId ? createLogger({ level: 'debug' }) : silentLogger();
    const scheduler = new ClockScheduler(this.clock);
    const identity = nextIdentity(dataDir, this.random, nodeId);
    const membership = new Membership(
      store,
      this.clock,
      this.config,
      log,
      // The data dir's lock is implied: a SimNode starts on a data dir only when its previous one there is dead.
      { nodeId, addr: '', tenants: null, classes: [className], dataDirId: identity.dataDirId },
      { scheduler },
    );
    this.membership = membership;
    const epoch = await membership.start(identity.epoch, () => this.node?.fenced());
    this.epoch = epoch;
    const random = this.random.fork();
    const replicaDeps = {
      store,
      clock: this.clock,
      random,
      config: this.config,
      log,
      writer: {
        nodeId,
        get epoch() {
          return membership.lease.epoch; // follows a rejoin, as a worker's does
        },
      },
      leaseValid: () => membership.lease.isValid(),
      deletes: new DeleteBatcher(store, this.clock, log),
      // A load that cycles idle, half busy, busy, a second each (no draw from the seed's streams).
      pace: new UploadPace(this.config, () => (Math.floor(this.clock.now() / 1_000) % 3) / 2, this.clock),
    };
    const slots = new ActorSlots(dataDir, slotsSettings(this.config), replicaDeps);
    this.slots = slots;
    const deps: PipelineDeps = { ...replicaDeps, nonces: new NonceSource(random), rules, slots, loadClass: async () => actorClass };
    const workers = inlineWorkers(deps, (event) => this.net.aimAtDelivery(nodeId, event));
    sharedMetrics ??= new NodeMetrics();
    const seams = { random: this.random.fork(), scheduler, rules, onRejoin: (e: number) => ((this.epoch = e), this.rejoins++) };
    this.node = new Node({
      config: this.config,
      clock: this.clock,
      log,
      store,
      workers,
      membership,
      identity: { nodeId, epoch },
      classes: { [className]: 'sim' },
      tenants: undefined,
      metrics: sharedMetrics,
      seams,
    });
    void this.node.refillTimer(dataDir); // unbounded: done when it returns
    this.node.startSweeping();
  }

  crash(): Db[] {
    this.clock.kill();
    const handles = this.openHandles();
    for (const db of handles) if (db.open && db.inTransaction) db.exec('ROLLBACK');
    return handles;
  }

  async stop(): Promise<void> {
    await this.node?.stop();
    this.clock.kill();
  }

  /** Every database handle this node has open (for a crash, and for cleanup at the end). */
  openHandles(): Db[] {
    const open = (this.slots as unknown as { open: Map<string, { db: Db }> } | undefined)?.open;
    return open ? [...open.values()].map((s) => s.db) : [];
  }
}

/**
 * The WorkerGroup the Node talks to, running the pipeline inline (no threads, same code);
 * `starting` hears each event as it is handed over (the network's aimed delivery fault).
 */
function inlineWorkers(deps: PipelineDeps, starting: (event: ActorEvent) => void): WorkerGroup {
  let finished = 0;
  const group = {
    size: 1,
    run: (event: ActorEvent) => {
      starting(event);
      return runEvent(deps, event).finally(() => finished++);
    },
    runBatch: async (_address: unknown, events: ActorEvent[]): Promise<RunOutcome[]> => {
      events.forEach(starting);
      const { outcomes, later } = await runBatch(
        (e, committed) => runEvent(deps, e, committed),
        events,
        () => finished++,
      );
      return outcomes.map((o, i) => (later.has(i) ? { ...o, final: later.get(i)! } : o));
    },
    progress: () => finished,
    broadcast: async (event: ActorEvent) => {
      await runEvent(deps, event);
    },
    destroy: async () => undefined,
  };
  return group as unknown as WorkerGroup;
}

/**
 * The simulated cluster: the nodes (SimNode: the real node core), their data dirs, and what
 * happens to them — start, crash, restart, clean stop, pause, join. A joining node first runs on
 * its own against a private bucket (the real pipeline, single node), so its data dir holds actors
 * with alarms the shared bucket has never seen (docs/alarm-index.md, R4).
 *
 * Node ids: n1… for the founding nodes, j1… for joiners. A crashed or stopped node is restarted
 * (a new epoch on the same data dir), after a while or at once (its old lease then still live: the
 * restart fences it, as a real node holding its data dir's lock does). A fenced node is not
 * restarted: it rejoins by itself (Node.rejoin).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SimClock, type Clock } from '../../src/core/clock.js';
import { parseAddress, type ActorAddress } from '../../src/core/address.js';
import { silentLogger } from '../../src/core/logger.js';
import type { SeededRandom } from '../../src/core/random.js';
import { NonceSource } from '../../src/alarms/keys.js';
import type { ProtocolRules } from '../../src/alarms/rules.js';
import { resolveOptions, type KeepworkOptions } from '../../src/core/config.js';
import { MemoryStore } from '../../src/store/memory.js';
import { ActorSlots, slotsSettings } from '../../src/workers/actor-slots.js';
import type { Db } from '../../src/workers/actor-db.js';
import type { ActorDefinition } from '../../src/workers/define-actor.js';
import { runEvent } from '../../src/workers/pipeline.js';
import type { PipelineDeps } from '../../src/workers/deps.js';
import type { Network } from './network.js';
import type { SimParams } from './params.js';
import { SIM_CLASS } from './sim-actor.js';
import { SimNode } from './sim-node.js';

export interface ClusterStats {
  starts: number;
  crashes: number;
  stops: number;
  pauses: number;
  joins: number;
  startFailures: number;
}

export class Cluster {
  readonly nodes: SimNode[] = [];
  readonly pending: string[] = [];
  readonly stats: ClusterStats = { starts: 0, crashes: 0, stops: 0, pauses: 0, joins: 0, startFailures: 0 };
  private readonly deadHandles: Db[] = [];
  /** Every actor database opened during the run (actorDbHooks): held until the end, so none is
   *  closed by the garbage collector (which would fold its WAL, as no real crash does). */
  readonly handles: Db[] = [];

  constructor(
    private readonly p: SimParams,
    private readonly base: SimClock,
    private readonly net: Network,
    private readonly random: SeededRandom,
    private readonly root: string,
    private readonly definition: (clock: Clock) => ActorDefinition,
    /** SAFE_RULES, or one unsafe variant's (unsafe-rules.ts): every node and joiner runs under them. */
    private readonly rules: ProtocolRules,
  ) {
    this.startMs = base.now();
  }

  /** When the run started (virtual). */
  private readonly startMs: number;

  /** Rejoins after a fence, over every node run so far. */
  rejoins(): number {
    return this.rejoinsOfReplaced + this.nodes.reduce((n, x) => n + x.rejoins, 0);
  }

  private rejoinsOfReplaced = 0;

  up(): SimNode[] {
    return this.nodes.filter((n) => n.up && !n.clock.isPaused);
  }

  byId(id: string): SimNode | undefined {
    return this.nodes.find((n) => n.nodeId === id);
  }

  /** Starts (or restarts) `nodeId` on its data dir; a refused start (the bucket out of reach) is retried. */
  start(nodeId: string): void {
    this.rollBackDead(join(this.root, nodeId));
    const old = this.byId(nodeId);
    const sn = new SimNode(
      {
        nodeId,
        dataDir: join(this.root, nodeId),
        options: this.optionsAt(),
        className: SIM_CLASS,
        definition: this.definition,
        rules: this.rules,
      },
      this.base,
      this.net,
      this.random.fork(),
    );
    if (old) this.rejoinsOfReplaced += old.rejoins;
    if (old) this.nodes.splice(this.nodes.indexOf(old), 1, sn);
    else this.nodes.push(sn);
    this.stats.starts++;
    sn.start().catch(() => {
      this.stats.startFailures++;
      this.deadHandles.push(...sn.crash());
      this.base.setTimer(1_000, () => this.startIfDown(nodeId));
    });
  }

  /** A node's options: after half the chaos, a (re)started node takes the later shard count (a change of S without a stop). */
  private optionsAt(): KeepworkOptions {
    const later = this.p.indexShardsLater;
    if (later === this.p.indexShards || this.base.now() - this.startMs < this.p.chaosMs / 2) return this.p.config;
    return { ...this.p.config, indexShards: later };
  }

  /**
   * A restarting node's dead predecessor may have begun a transaction after its crash (a promise
   * reaction already queued): SQLite drops such a lock with the dead process, so it is rolled back
   * before the new process opens the files.
   */
  private rollBackDead(dataDir: string): void {
    for (const db of this.handles) if (db.open && db.inTransaction && db.name.startsWith(dataDir + '/')) db.exec('ROLLBACK');
  }

  startIfDown(nodeId: string): void {
    const n = this.byId(nodeId);
    if (!n || n.clock.isDead) this.start(nodeId);
  }

  crash(n: SimNode): void {
    this.stats.crashes++;
    this.deadHandles.push(...n.crash());
  }

  stop(n: SimNode): void {
    this.stats.stops++;
    void n.stop().catch(() => undefined);
  }

  pause(n: SimNode, forMs: number): void {
    if (n.clock.isPaused) return;
    this.stats.pauses++;
    n.clock.pause();
    this.base.setTimer(forMs, () => n.clock.resume());
  }

  /** A node that ran on its own joins: its data dir already holds actors with alarms. */
  async prepareJoiner(nodeId: string, actors: ActorAddress[], alarmsAt: number[]): Promise<void> {
    const dataDir = join(this.root, nodeId);
    mkdirSync(dataDir, { recursive: true });
    const clock = new SimClock(this.base.now() - 3_600_000);
    const random = this.random.fork();
    const config = resolveOptions(this.p.config);
    const store = new MemoryStore({ clock });
    const log = silentLogger();
    const replicaDeps = { store, clock, random, config, log, writer: { nodeId, epoch: 0 }, leaseValid: () => true };
    const slots = new ActorSlots(dataDir, slotsSettings(config), replicaDeps);
    const deps: PipelineDeps = {
      ...replicaDeps,
      nonces: new NonceSource(random),
      rules: this.rules,
      slots,
      loadClass: async () => this.definition(clock),
    };
    for (let i = 0; i < actors.length; i++) {
      const r = await runEvent(deps, {
        type: 'request',
        address: actors[i]!,
        method: 'set',
        args: [alarmsAt[i]],
        durable: true,
        generation: 1,
      });
      if (r.type !== 'ok') throw new Error(`sim: preparing joiner ${nodeId} failed: ${r.error.message}`);
    }
    await slots.closeAll();
    this.pending.push(nodeId);
  }

  join(): string | undefined {
    const nodeId = this.pending.shift();
    if (!nodeId) return undefined;
    this.stats.joins++;
    this.start(nodeId);
    return nodeId;
  }

  /** Stops every timer of every node and closes every database handle (after the run). */
  shutdown(): void {
    for (const n of this.nodes) {
      n.clock.kill();
      this.deadHandles.push(...n.openHandles());
    }
    for (const db of [...this.deadHandles, ...this.handles]) if (db.open) db.close();
  }
}

export const simAddress = (name: string) => parseAddress({ tenant: 'sim', className: SIM_CLASS, name });

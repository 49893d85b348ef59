/**
 * What happens to the cluster during the chaos phase, as self-rescheduling timers on the shared
 * virtual clock (every choice drawn from the seed):
 *
 *   workload  a client call every ~callGapMs to a node that is up: set an alarm (on the grid of
 *             alarmStepMs, so times recur), clear it, or touch the actor; plain or durable; sent
 *             to the actor's holder when the bucket names a live one (otherwise the node takes it);
 *             sometimes a burst of 2–8 durable calls to one actor at once (group commit). A durable
 *             set or touch carries an id of its own; its reply is reported to `durableAcked`;
 *             actors of the network's aimed delivery fault (`quiet`) get no more calls
 *   chaos     every ~faultGapMs one of: crash a node · clean stop (releases) · cut a node off
 *             (fail or hang; its lease renewing or not) · pause a node · join the next joiner
 *             (its first upload perhaps the target of the aimed fault) · restart what is down
 *             (crashed or stopped nodes, after a margin or two; a crashed one sometimes at once,
 *             its lease still live) — a fenced node rejoins by itself; a node that took the
 *             hold of an aimed delivery (`spared`) is left up
 */
import type { SimClock } from '../../src/core/clock.js';
import { formatAddress, type ActorAddress } from '../../src/core/address.js';
import type { SeededRandom } from '../../src/core/random.js';
import { decodeHold, holdKey } from '../../src/leases/records.js';
import type { Cluster } from './cluster.js';
import type { Network } from './network.js';
import type { SimParams } from './params.js';
import { gridTime } from './sim-actor.js';
import type { SimNode } from './sim-node.js';

export interface WorkloadStats {
  calls: number;
  callsOk: number;
  alarmsSet: number;
}

export class Drivers {
  readonly work: WorkloadStats = { calls: 0, callsOk: 0, alarmsSet: 0 };
  quickRestarts = 0;
  private running = true;
  private readonly downSince = new Map<string, number>();
  private readonly lastSet = new Map<string, number>();
  /** Ids of durable calls (their rows in the actor's `calls` table), above the plain calls' 1 and 2. */
  private nextId = 1000;
  /** Told every acknowledged durable set or touch (run-seed.ts checks its row is in the bucket). */
  durableAcked: (address: ActorAddress, id: number) => void = () => undefined;

  constructor(
    private readonly p: SimParams,
    private readonly clock: SimClock,
    private readonly net: Network,
    private readonly cluster: Cluster,
    private readonly actors: readonly ActorAddress[],
    private readonly random: SeededRandom,
  ) {}

  start(): void {
    this.clock.setTimer(this.gap(this.p.callGapMs), () => this.callTick());
    this.clock.setTimer(this.gap(this.p.faultGapMs), () => this.chaosTick());
  }

  /** The faults are healed: no more calls or faults; everything down is brought back. */
  stopChaos(): void {
    this.running = false;
    this.net.healAll();
    for (const n of this.cluster.nodes) if (n.clock.isPaused) n.clock.resume();
    while (this.cluster.join()) {
      // every remaining joiner joins
    }
    this.restartDown(true);
    this.clock.setTimer(2 * this.marginMs(), () => this.restartDown(true));
  }

  /** The liveness canary: at healing every node crashes and none comes back. */
  stopEverything(): void {
    this.running = false;
    this.net.healAll();
    for (const n of this.cluster.nodes) if (!n.clock.isDead) this.cluster.crash(n);
  }

  private gap(meanMs: number): number {
    return 1 + this.random.int(2 * meanMs);
  }

  private marginMs(): number {
    return this.cluster.nodes[0]!.config.marginMs;
  }

  private callTick(): void {
    if (!this.running) return;
    this.call();
    this.clock.setTimer(this.gap(this.p.callGapMs), () => this.callTick());
  }

  private call(): void {
    const up = this.cluster.up();
    if (up.length === 0) return;
    const race =
      this.net.raceTargets.length > 0 && this.random.float() < 0.5
        ? this.net.raceTargets[this.random.int(this.net.raceTargets.length)]
        : undefined;
    if (race && this.net.quiet.has(race.address.key)) return;
    if (race)
      return this.send(
        race.address,
        up.filter((n) => n.nodeId !== race.heldBy),
        'set',
        [race.dueMs],
        false,
      );
    const address = this.actors[this.random.int(this.actors.length)]!;
    if (this.net.quiet.has(address.key)) return;
    if (this.random.float() < 0.1) {
      for (let n = 2 + this.random.int(7); n > 0; n--) this.send(address, up, 'touch', [], true);
      return;
    }
    const x = this.random.float();
    const [method, args] = x < 0.6 ? ['set', [this.alarmTime(address)]] : x < 0.7 ? ['clear', []] : ['touch', []];
    this.send(address, up, method, args, this.random.float() < 0.3);
  }

  private send(address: ActorAddress, up: SimNode[], method: string, args: unknown[], durable: boolean): void {
    if (up.length === 0) return;
    const node = this.holderOf(address, up) ?? up[this.random.int(up.length)]!;
    const handle = node.node!.actor(formatAddress(address));
    this.work.calls++;
    const id = durable && method !== 'clear' ? this.nextId++ : undefined;
    const sent = durable ? handle.callDurable(method, ...args, ...(id === undefined ? [] : [id])) : handle.call(method, ...args);
    sent.then(
      () => {
        this.work.callsOk++;
        if (method === 'set') this.work.alarmsSet++;
        if (id !== undefined) this.durableAcked(address, id);
      },
      () => undefined,
    );
  }

  /**
   * An alarm time on the grid: mostly ahead; sometimes one set before (apps re-set the same
   * alarm, so keys and times recur); sometimes already past ("run it now").
   */
  private alarmTime(a: ActorAddress): number {
    const key = formatAddress(a);
    const x = this.random.float();
    const step = this.p.alarmStepMs;
    let at = gridTime(this.clock.now(), step, 1 + this.random.int(8));
    if (x < 0.15) at = gridTime(this.clock.now(), step, -this.random.int(Math.ceil((4 * this.marginMs()) / step)));
    else if (x < 0.45 && this.lastSet.has(key)) at = this.lastSet.get(key)!;
    this.lastSet.set(key, at);
    return at;
  }

  /** The node the bucket's hold names, if it is up (what forwarding would reach). */
  private holderOf(a: ActorAddress, up: SimNode[]): SimNode | undefined {
    const obj = this.net.bucket.peek(holdKey(a));
    if (!obj) return undefined;
    const hold = decodeHold(obj.body);
    return hold.state === 'held' ? up.find((n) => n.nodeId === hold.nodeId) : undefined;
  }

  private chaosTick(): void {
    if (!this.running) return;
    this.chaos();
    this.clock.setTimer(this.gap(this.p.faultGapMs), () => this.chaosTick());
  }

  private chaos(): void {
    this.restartDown(false);
    const up = this.cluster.up();
    const x = this.random.float();
    const margin = this.marginMs();
    if (x < 0.15 && this.cluster.pending.length > 0) {
      const id = this.cluster.join()!;
      if (this.random.float() < 0.6) this.net.aimAt.add(id);
      return;
    }
    if (up.length === 0) return;
    const n = up[this.random.int(up.length)]!;
    if (this.net.spared.has(n.nodeId)) return;
    if (x < 0.35 && up.length > 1) {
      this.cluster.crash(n);
      // kill -9 and restart on the same data dir at once: its lease is live, the restart fences it
      if (this.random.float() < 0.3) this.clock.setTimer(1 + this.random.int(300), () => this.quickRestart(n.nodeId));
      return;
    }
    if (x < 0.45 && up.length > 1) return this.cluster.stop(n);
    if (x < 0.8) {
      const mode = this.random.float() < 0.5 ? 'fail' : 'hang';
      const forMs = Math.floor(margin * (0.3 + 2.5 * this.random.float()));
      this.net.cutOff(n.nodeId, mode, this.random.float() < 0.4, forMs);
      return;
    }
    this.cluster.pause(n, Math.floor(margin * (0.1 + 1.5 * this.random.float())));
  }

  private quickRestart(nodeId: string): void {
    if (!this.running || !this.cluster.byId(nodeId)?.clock.isDead) return;
    this.quickRestarts++;
    this.downSince.delete(nodeId);
    this.cluster.start(nodeId);
  }

  /** Restarts crashed and stopped nodes that have been down for a margin (all, if `now`); a fenced node rejoins by itself. */
  private restartDown(all: boolean): void {
    const margin = this.marginMs();
    for (const n of [...this.cluster.nodes]) {
      const down = n.clock.isDead;
      if (!down) {
        this.downSince.delete(n.nodeId);
        continue;
      }
      const since = this.downSince.get(n.nodeId) ?? this.clock.now();
      this.downSince.set(n.nodeId, since);
      if (!all && this.clock.now() - since < margin + this.random.int(2 * margin)) continue;
      this.downSince.delete(n.nodeId);
      this.cluster.start(n.nodeId);
    }
  }
}

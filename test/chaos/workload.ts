/**
 * The chaos run's client: it sends the plan's operations to the nodes' HTTP APIs at their planned
 * times and records every attempt. A durable op is retried (the same idempotency key, round the
 * other nodes) until a node acknowledges it or the run gives up on it; a plain op and a read are
 * sent once. A destroy waits for its actor's ops in flight, and the next incarnation's ops wait
 * for the destroy, so no op of the old name is sent after its deletion was acknowledged.
 *
 * Each reply of a first attempt is checked at once (the stale-read check): it must count every
 * durable apply of its actor acknowledged before it was sent.
 */
import { call } from '../../support/cluster/calls.js';
import type { ChaosNodes } from './nodes.js';
import { actorName, type Op, type Plan } from './plan.js';

const ATTEMPT_TIMEOUT_MS = 4_000;
const IN_FLIGHT_MAX = 24;

export interface Attempt {
  op: number;
  n: number;
  node: number;
  sentAt: number;
  endAt: number;
  status: number;
  code?: string;
  message?: string;
  result?: { seq: number; durables: number };
}

export interface Outcome {
  op: Op;
  attempts: Attempt[];
  ackedAt?: number;
  /** When the first attempt went out (undefined: never sent). */
  sentAt?: number;
}

export interface Violation {
  check: string;
  message: string;
  /** Harness time it was found. */
  at: number;
  actor?: string;
  /** The op it is about, for the requests around it. */
  op?: number;
}

export class Workload {
  readonly outcomes: Outcome[];
  /** Durable applies acknowledged, per actor, as ack times. */
  private readonly durableAcks = new Map<string, number[]>();
  private inFlight = 0;
  private readonly slotGate: Promise<void>[];
  private readonly slotOps: Set<Promise<void>>[];
  private giveUpAt = Infinity;
  private readonly waiting: Array<() => void> = [];
  /** Actors whose destroy was launched: nothing is sent to them from then on but that. */
  private readonly destroying = new Set<string>();
  private startedAt = 0;
  private races = 0;

  constructor(
    private readonly plan: Plan,
    private readonly nodes: ChaosNodes,
    private readonly violation: (v: Violation) => void,
  ) {
    this.outcomes = plan.ops.map((op) => ({ op, attempts: [] }));
    this.slotGate = Array.from({ length: plan.slots }, () => Promise.resolve());
    this.slotOps = Array.from({ length: plan.slots }, () => new Set());
  }

  /**
   * Sends every op at its time after `startedAt`; resolves when all have ended (acknowledged or
   * given up). The aimed ops go out on time whatever is in flight: their fault's window is narrow,
   * and the ops stuck on its node are what fill the in-flight cap.
   */
  async run(startedAt: number, stopped: () => boolean): Promise<void> {
    this.startedAt = startedAt;
    const all = this.all;
    const sendAll = async (ops: readonly Op[], capped: boolean) => {
      for (const op of ops) {
        if (stopped()) break;
        const wait = startedAt + op.at - Date.now();
        if (wait > 0) await sleep(wait);
        while (capped && this.inFlight >= IN_FLIGHT_MAX) await new Promise<void>((r) => this.waiting.push(r));
        all.push(this.launch(op));
      }
    };
    await Promise.all([
      sendAll(
        this.plan.ops.filter((op) => op.aim === undefined),
        true,
      ),
      sendAll(
        this.plan.ops.filter((op) => op.aim !== undefined),
        false,
      ),
    ]);
    while (all.length > 0) await Promise.all(all.splice(0));
  }

  private readonly all: Promise<void>[] = [];

  /** Whether `armAt` may send to this actor: the latest incarnation its slot was sent, no destroy of it launched. */
  mayArm(slot: number, incarnation: number): boolean {
    if (this.destroying.has(actorName(slot, incarnation)) || slot >= this.plan.slots) return false;
    const latest = this.outcomes.filter((o) => o.op.slot === slot && o.sentAt !== undefined).at(-1)?.op.incarnation;
    return latest === incarnation;
  }

  /**
   * A durable arm at `dueAt` of the actor in `slot`'s `incarnation`, through node `via`, sent now
   * (the race of relay-faults.ts; op id `c<seed>-race<k>`). False when that actor is being
   * destroyed or is no longer its slot's (nothing is sent).
   */
  armAt(slot: number, incarnation: number, dueAt: number, via: number, aim: Op['aim']): boolean {
    if (!this.mayArm(slot, incarnation)) return false;
    const i = this.outcomes.length;
    const op: Op = {
      i,
      id: `c${this.plan.shape.seed}-race${this.races++}`,
      at: Date.now() - this.startedAt,
      slot,
      incarnation,
      kind: 'arm',
      durable: true,
      via,
      inMs: 0,
      periodMs: 0,
      failTimes: 0,
      dueAt,
      ...(aim ? { aim } : {}),
    };
    this.outcomes.push({ op, attempts: [] });
    this.all.push(this.launch(op));
    return true;
  }

  /** Durable ops still unacknowledged are retried until `at`, then given up. */
  giveUpAfter(at: number): void {
    this.giveUpAt = at;
  }

  private launch(op: Op): Promise<void> {
    const slot = op.slot;
    const ops = this.slotOps[slot]!;
    let p: Promise<void>;
    if (op.kind === 'destroy') {
      this.destroying.add(actorName(op.slot, op.incarnation));
      const before = Promise.all([...ops]);
      p = this.slotGate[slot]!.then(() => before).then(() => this.send(op));
      this.slotGate[slot] = p;
      this.slotOps[slot] = new Set();
    } else {
      p = this.slotGate[slot]!.then(() => this.send(op));
      ops.add(p);
    }
    return p;
  }

  private async send(op: Op): Promise<void> {
    this.inFlight++;
    try {
      if (op.durable) await this.untilAcked(op);
      else await this.attempt(op, 1);
    } finally {
      this.inFlight--;
      this.waiting.shift()?.();
    }
  }

  private async untilAcked(op: Op): Promise<void> {
    for (let n = 1; Date.now() < this.giveUpAt; n++) {
      const a = await this.attempt(op, n);
      if (a?.status === 200) return;
      if (a && a.status >= 400 && a.status < 500 && a.status !== 408) return; // refused: retrying cannot help
      await sleep(100 + ((op.i * 7 + n * 13) % 400));
    }
  }

  /** One attempt through the op's next node that is up or paused; undefined when none is. */
  private async attempt(op: Op, n: number): Promise<Attempt | undefined> {
    const node = this.pickNode(op.via + n - 1);
    if (node === undefined) return undefined;
    const url = this.nodes.url(node) ?? this.nodes.pausedUrl(node)!;
    const actor = actorName(op.slot, op.incarnation);
    const outcome = this.outcomes[op.i]!;
    const sentAt = Date.now();
    outcome.sentAt ??= sentAt;
    const [method, args] = callOf(op);
    const r = await call(url, actor, method, args, {
      durable: op.durable,
      timeoutMs: ATTEMPT_TIMEOUT_MS,
      ...(op.durable ? { idempotencyKey: op.id } : {}),
    });
    const a: Attempt = { op: op.i, n, node, sentAt, endAt: Date.now(), status: r.status };
    if (r.ok) a.result = r.result as Attempt['result'];
    else Object.assign(a, { code: r.error, message: r.message?.slice(0, 300) });
    outcome.attempts.push(a);
    if (r.status === 200) this.acked(op, a, actor);
    if (r.status >= 500 && !RETRYABLE_500.has(r.error ?? ''))
      this.violation({ check: 'no 500', message: `${method} answered ${r.status} ${r.error}: ${r.message}`, at: a.endAt, actor, op: op.i });
    return a;
  }

  private acked(op: Op, a: Attempt, actor: string): void {
    const outcome = this.outcomes[op.i]!;
    outcome.ackedAt ??= a.endAt;
    // Only a first attempt's reply is fresh: a retry of a durable op replays the first result.
    if (a.n === 1 && a.result && op.kind !== 'destroy') {
      const before = (this.durableAcks.get(actor) ?? []).filter((t) => t < a.sentAt).length;
      if (a.result.durables < before)
        this.violation({
          check: 'stale read',
          message: `${op.kind} ${op.id} answered by n${a.node} counts ${a.result.durables} durable applies; ${before} were acknowledged before it was sent`,
          at: a.endAt,
          actor,
          op: op.i,
        });
    }
    if (op.kind === 'apply' && op.durable && outcome.ackedAt === a.endAt) {
      const acks = this.durableAcks.get(actor) ?? [];
      acks.push(a.endAt);
      this.durableAcks.set(actor, acks);
    }
  }

  private pickNode(from: number): number | undefined {
    const count = this.nodes.count;
    for (let k = 0; k < count; k++) {
      const n = (from + k) % count;
      const s = this.nodes.state(n);
      if (s === 'up' || s === 'paused') return n;
    }
    return undefined;
  }
}

/**
 * 5xx codes a retry may cure (docs/http-api.md), and the bucket's own errors, which a node passes
 * on as 500 when its retries are spent (the faults fault+ injects): any other 5xx is a bug here.
 */
const RETRYABLE_500 = new Set([
  'OVERLOADED',
  'NODE_STOPPED',
  'OWNER_UNREACHABLE',
  'LEASE_LOST',
  'ACTOR_GIVEN_UP',
  'NO_ANSWER',
  'HANDLER_TIMEOUT',
  'STORE_UNAVAILABLE',
  'AMBIGUOUS_WRITE',
]);

function callOf(op: Op): [string, unknown[]] {
  switch (op.kind) {
    case 'apply':
      return ['apply', [op.id, op.durable]];
    case 'read':
      return ['read', []];
    case 'arm':
    case 'every':
      if (op.dueAt !== undefined) return ['armAt', [op.id, op.durable, op.dueAt]];
      return ['arm', [op.id, op.durable, op.inMs, op.periodMs, op.failTimes]];
    case 'clear':
      return ['clear', [op.id, op.durable]];
    case 'destroy':
      return ['destroy', []];
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

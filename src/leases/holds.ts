/**
 * Per-actor holds (`holds/<tenant>/<class>/<name hex>`, docs/architecture.md): acquiring an actor for
 * this node — always generation + 1 — or learning which live node has it.
 *
 *   get hold ─▶ holdDecision ─▶ create (If-None-Match) · ours · take (If-Match) ·
 *               fence the holder's node record (If-Match) then take · forward to the holder
 *
 * Only while this node's lease is valid. A lost race (412) re-reads and decides again, a bounded
 * number of times.
 *
 * A take without the read (`expect`): the sweep offers an orphaned alarm's entry with the
 * generation that wrote it, which is most often the actor's hold still — held by the run that
 * died, or released by a node that stopped. Once a read found another node's hold takeable as it
 * stood (released, or held by a run known to be over), the next expected actor is taken with
 * `If-Match` on the etag its hold would have if it were that node's, same epoch and state, at the
 * entry's generation (every store's etag is the MD5 of the body; the table checks this on its own
 * writes). The PUT lands only if the hold is exactly that record, and for that record the read
 * would have decided `take` too; a 412 falls back to the read. A missed guess costs a request, so
 * after one the table reads again until a read shows that a guess would have been right.
 *
 * A create without the read: while new actors are being created (a burst of first calls), the
 * hold is created with `If-None-Match: *` at once, as a read that found none would decide; a 412
 * (the actor exists) falls back to the read and stops these tries until a read finds no hold
 * again. On S3 that is one request and one round trip less per new actor.
 */
import type { Clock } from '../core/clock.js';
import { ErrorCode, LeaseLost, StoreUnavailable, isKeepworkError } from '../core/errors.js';
import { etagOf } from '../store/etag.js';
import type { ActorAddress } from '../core/address.js';
import type { Settings } from '../core/config.js';
import { invariant } from '../core/invariant.js';
import type { Logger } from '../core/logger.js';

/** Without `newActorsPerTenantPerSecond` (a table in a test), new actors are not rate-limited. */
export type HoldSettings = Settings<'graceMs'> & Partial<Settings<'newActorsPerTenantPerSecond'>>;
import type { ObjectStore } from '../store/types.js';
import { holdDecision } from './decisions.js';
import type { NodeDirectory } from './directory.js';
import type { NodeLease } from './node-lease.js';
import { decodeHold, encodeHold, encodeNode, holdKey, nodeKey, type HoldRecord, type NodeRecord } from './records.js';
import { NewActorRate } from './new-actor-rate.js';

/** `none`: the actor has no hold anywhere (it was never created), and the acquire was told not to create one. */
export type Ownership = { kind: 'mine'; generation: number } | { kind: 'elsewhere'; nodeId: string; addr: string } | { kind: 'none' };

const ROUNDS_MAX = 4;
/** How many released generations are remembered (a release lands or fails long before this many more). */
const RELEASED_MAX = 65_536;
/** How many expected generations are remembered (the sweep offers at most a few thousand at a time). */
const EXPECTED_MAX = 16_384;

/** Test seam: told of every take without a read (`expect`), and whether its PUT landed (the simulator counts them). */
export const holdHooks: { onExpectedTake?: (taken: boolean) => void } = {};

export class HoldTable {
  /** `created`: this table created the hold (none existed) and no event has claimed that yet (`claimCreated`). */
  private readonly mine = new Map<string, { address: ActorAddress; generation: number; etag: string; created?: boolean }>();
  /** Generations this node released (per actor), whose release PUT may still be in flight. */
  private readonly released = new Map<string, number>();
  /** Actors the sweep offered, with the generation of the entry (`expect`). */
  private readonly expected = new Map<string, number>();
  /** The hold a read last found takeable as it stood (released, or held by a run that is over): what an expected take assumes. */
  private lastTakeable: Omit<HoldRecord, 'generation'> | undefined;
  /** Whether expected takes guess: since a read found a hold a guess would have taken, and no guess missed since. */
  private guessing = false;
  /** Whether an actor the sweep did not offer is created without a read first (createUnread). */
  private creating = false;
  /** Whether this store's etags are the MD5 of the body (learnt from this table's own writes). */
  private etagsPredictable = false;
  /**
   * Holds written by this table: after a read of the hold, without one (`expect`, or a new
   * actor's create), and tries without a read whose PUT found another hold (412).
   */
  readonly takes = { read: 0, expected: 0, expectedMissed: 0, created: 0, createdMissed: 0 };
  /** The per-tenant rate of new actors (holds created), when configured. */
  private readonly newActors: NewActorRate | undefined;
  /**
   * How many times every hold was forgotten (the lease lost). A hold PUT or read in flight across
   * that (its write held up at the bucket while the node was fenced and rejoined) is not recorded:
   * it is the lost epoch's, which others may take at once.
   */
  private forgets = 0;

  constructor(
    private readonly store: ObjectStore,
    private readonly clock: Clock,
    private readonly config: HoldSettings,
    private readonly lease: NodeLease,
    private readonly nodes: NodeDirectory,
    private readonly self: { nodeId: string },
    private readonly log: Logger,
  ) {
    const { newActorsPerTenantPerSecond } = config;
    this.newActors = newActorsPerTenantPerSecond === undefined ? undefined : new NewActorRate({ newActorsPerTenantPerSecond });
  }

  /** The generation this node holds the actor under, if it does. */
  held(a: ActorAddress): number | undefined {
    return this.mine.get(a.key)?.generation;
  }

  /**
   * True once per hold this table created (`If-None-Match: *` landed: no hold existed): for the
   * first event to run under it. Only an actor's holder writes its chain and holds are never
   * deleted, so no node has ever written that actor's chain, and that event's worker need not
   * list it (docs/architecture.md, "A request"). Every later event lists it as usual.
   */
  claimCreated(a: ActorAddress): boolean {
    const mine = this.mine.get(a.key);
    if (!mine?.created) return false;
    mine.created = false;
    return true;
  }

  heldCount(): number {
    return this.mine.size;
  }

  /** `create: false`: an actor without a hold (never created) is `none`, and nothing is written (a read of it). */
  async acquire(a: ActorAddress, { create = true }: { create?: boolean } = {}): Promise<Ownership> {
    const { key } = a;
    const since = this.forgets;
    const generation = this.expected.get(key);
    if (generation !== undefined) this.expected.delete(key);
    const known = this.mine.get(key);
    if (known) {
      this.lease.check();
      return { kind: 'mine', generation: known.generation };
    }
    const guessed =
      generation !== undefined ? await this.takeExpected(a, generation, since) : create ? await this.createUnread(a, since) : undefined;
    if (guessed) return guessed;
    for (let round = 0; round < ROUNDS_MAX; round++) {
      this.lease.check();
      const outcome = await this.tryAcquire(a, generation, create, since);
      if (outcome) return outcome;
    }
    throw new StoreUnavailable(`could not settle the hold of ${key} after ${ROUNDS_MAX} rounds of races`);
  }

  /** Gives the actor back (after its replication is done). */
  async release(a: ActorAddress): Promise<void> {
    const { key } = a;
    const known = this.mine.get(key);
    if (!known) return;
    this.mine.delete(key);
    this.noteReleased(key, known.generation);
    const record: HoldRecord = { nodeId: this.self.nodeId, epoch: this.lease.epoch, generation: known.generation, state: 'released' };
    await this.store.put(holdKey(a), encodeHold(record), { ifMatch: known.etag }).catch((e: unknown) => {
      if (!isKeepworkError(e, ErrorCode.PreconditionFailed)) throw e; // someone took it already
    });
  }

  /**
   * The actor's hold is likely at `generation` (an index entry of that generation is due): the
   * next acquire may take it without reading it first. Bounded: the oldest are forgotten first.
   */
  expect(a: ActorAddress, generation: number): void {
    const { key } = a;
    this.expected.delete(key);
    this.expected.set(key, generation);
    if (this.expected.size > EXPECTED_MAX) this.expected.delete(this.expected.keys().next().value!);
  }

  /**
   * The take without a read: If-Match on the etag of the hold `{…lastTakeable, generation}`.
   * undefined: nothing to assume (no guess since the last one missed, until a read shows one
   * would have been right), or the hold is not that record (412) — read it.
   */
  private async takeExpected(a: ActorAddress, generation: number, since: number): Promise<Ownership | undefined> {
    const like = this.lastTakeable;
    if (!this.guessing || !like || !this.etagsPredictable || generation < (this.released.get(a.key) ?? 0)) return undefined;
    if (like.state === 'held' && !this.nodes.isOver(like.nodeId, like.epoch)) return undefined; // (never: a run stays over)
    this.lease.check();
    const assumed: HoldRecord = { nodeId: like.nodeId, epoch: like.epoch, generation, state: like.state };
    const taken = await this.write(a, generation + 1, { ifMatch: etagOf(encodeHold(assumed)) }, since, 'expected');
    if (!taken) {
      this.takes.expectedMissed++;
      this.guessing = false;
    }
    holdHooks.onExpectedTake?.(taken !== undefined);
    return taken;
  }

  /**
   * The create without a read: `If-None-Match: *` at generation 1, what a read that found no hold
   * decides. Tried while new actors are being created (the last read of an actor the sweep did
   * not offer found none, and no try missed since), never for an actor this node released (its
   * hold exists, at a higher generation). undefined: not tried, or the hold exists (412) — read it.
   */
  private async createUnread(a: ActorAddress, since: number): Promise<Ownership | undefined> {
    if (!this.creating || this.released.has(a.key)) return undefined;
    // Past the tenant's rate the read decides: an actor that exists is taken as usual, a new one refused.
    if (this.newActors && !this.newActors.has(a, this.clock.now())) return undefined;
    this.lease.check();
    this.newActors?.take(a, this.clock.now());
    const made = await this.write(a, 1, { ifNoneMatch: '*' }, since, 'created');
    if (!made) {
      this.newActors?.giveBack(a);
      this.takes.createdMissed++;
      this.creating = false;
    }
    return made;
  }

  /** Remembers a released generation (bounded: the oldest are forgotten first). */
  private noteReleased(key: string, generation: number): void {
    this.released.delete(key);
    this.released.set(key, generation);
    if (this.released.size > RELEASED_MAX) this.released.delete(this.released.keys().next().value!);
  }

  /** Releases every hold this node has (clean shutdown, after replication finished); a failed release is logged. */
  async releaseAll(): Promise<void> {
    const addresses = [...this.mine.values()].map((m) => m.address);
    await Promise.all(
      addresses.map((a) =>
        this.release(a).catch((e: unknown) =>
          this.log.warn({ actor: a.key, err: e }, 'releasing a hold at stop failed; the hold stays until this node’s lease ends'),
        ),
      ),
    );
  }

  /** Forgets every hold without writing (the lease was lost: others will fence and take them). */
  forgetAll(): void {
    this.forgets++;
    this.mine.clear();
  }

  forget(a: ActorAddress): void {
    this.mine.delete(a.key);
  }

  /** undefined: lost a race, decide again. */
  /** `expected`: the generation the sweep's entry named, if any (whether a guess would have been right). */
  private async tryAcquire(a: ActorAddress, expected: number | undefined, create: boolean, since: number): Promise<Ownership | undefined> {
    const obj = await this.store.get(holdKey(a));
    const hold = obj ? decodeHold(obj.body) : null;
    this.checkNotBelowReleased(a, hold?.generation ?? 0, 'the bucket holds');
    // The holder's record matters only for a hold still `held` by a run not known to be over
    // (holdDecision takes the actor for a released hold, or a holder's ended or missing run).
    const judge = hold && hold.nodeId !== this.self.nodeId && hold.state === 'held' && !this.nodes.isOver(hold.nodeId, hold.epoch);
    const holder = judge ? await this.nodes.fresh(hold.nodeId) : null;
    const d = holdDecision(
      hold,
      holder?.record ?? null,
      { nodeId: this.self.nodeId, epoch: this.lease.epoch },
      this.clock.now(),
      this.config.graceMs,
    );
    switch (d.kind) {
      case 'ours':
        // A generation this node released: the release may still be in flight and land after this
        // read, so it is never adopted as it stands but taken under a new generation (a late
        // release then fails its If-Match).
        if (this.released.get(a.key) === d.generation) return this.write(a, d.generation + 1, { ifMatch: obj!.etag }, since);
        this.checkNotForgotten(a, since);
        this.mine.set(a.key, { address: a, generation: d.generation, etag: obj!.etag });
        return { kind: 'mine', generation: d.generation };
      case 'forward':
        return { kind: 'elsewhere', nodeId: d.nodeId, addr: d.addr };
      case 'create': {
        if (!create) return { kind: 'none' };
        if (expected === undefined) this.creating = true; // new actors: the next may be new too
        this.newActors?.take(a, this.clock.now()); // OVERLOADED past the tenant's rate: nothing written
        const made = await this.write(a, 1, { ifNoneMatch: '*' }, since);
        if (!made) this.newActors?.giveBack(a); // it exists after all
        return made;
      }
      case 'take':
        if (this.releasedSince(a, hold!)) return undefined;
        this.noteTakeable(hold!, expected);
        return this.write(a, d.generation, { ifMatch: obj!.etag }, since);
      case 'fenceThenTake':
        if (this.releasedSince(a, hold!) || !(await this.fence(holder!.record, holder!.etag))) return undefined;
        if (this.releasedSince(a, hold!)) return undefined;
        this.noteTakeable(hold!, expected);
        return this.write(a, d.generation, { ifMatch: obj!.etag }, since);
    }
  }

  /**
   * A hold read and taken as it stood — another node's, released or held by a run known to be
   * over (for either, any generation is takeable): what `takeExpected` assumes next. Guesses
   * start (again) once such a read found the generation the sweep's entry named: a guess would
   * have been right.
   */
  private noteTakeable(hold: HoldRecord, expected: number | undefined): void {
    const takeable = hold.nodeId !== this.self.nodeId && (hold.state === 'released' || this.nodes.isOver(hold.nodeId, hold.epoch));
    if (takeable) this.lastTakeable = { nodeId: hold.nodeId, epoch: hold.epoch, state: hold.state };
    if (expected !== undefined) this.guessing = takeable && hold.generation === expected;
  }

  private async write(
    a: ActorAddress,
    generation: number,
    condition: { ifNoneMatch: '*' } | { ifMatch: string },
    since: number,
    how: 'read' | 'expected' | 'created' = 'read',
  ): Promise<Ownership | undefined> {
    this.checkNotBelowReleased(a, generation - 1, 'writing a hold on top of');
    const record: HoldRecord = { nodeId: this.self.nodeId, epoch: this.lease.epoch, generation, state: 'held' };
    const body = encodeHold(record);
    try {
      const { etag } = await this.store.put(holdKey(a), body, condition);
      this.etagsPredictable = etag === etagOf(body);
      this.checkNotForgotten(a, since);
      this.mine.set(a.key, { address: a, generation, etag, created: 'ifNoneMatch' in condition });
      this.takes[how]++;
      return { kind: 'mine', generation };
    } catch (e) {
      if (isKeepworkError(e, ErrorCode.PreconditionFailed)) return undefined;
      throw e;
    }
  }

  /**
   * The lease was lost (every hold forgotten) while this acquire awaited the bucket: what it read
   * or wrote is the lost epoch's hold, which another node may take at once, so it is not recorded
   * as this node's — the caller retries, under the new epoch once the node has rejoined.
   */
  private checkNotForgotten(a: ActorAddress, since: number): void {
    if (this.forgets !== since)
      throw new LeaseLost(`the lease of ${this.self.nodeId} was lost while the hold of ${a.key} was being taken; retry`);
  }

  /**
   * Whether this node released a generation above `hold` after reading it: while this acquire
   * awaited the holder's record (or its fence), another acquire of the same actor on this node
   * won, and the actor was given back (idle, or a clean stop). The read is stale — a lost race,
   * read again; a PUT on it would fail its If-Match anyway, and `write` refuses to build on it.
   */
  private releasedSince(a: ActorAddress, hold: HoldRecord): boolean {
    return (this.released.get(a.key) ?? 0) > hold.generation;
  }

  /**
   * A hold's generation never decreases: no hold read, and none this node writes on top of, is
   * below a generation this node already released for the actor (holds are never deleted).
   */
  private checkNotBelowReleased(a: ActorAddress, generation: number, what: string): void {
    const released = this.released.get(a.key) ?? 0;
    invariant(generation >= released, () => `${what} generation ${generation} of ${a.key}, below ${released} this node released`);
  }

  /** Writes the holder's record `fenced` so it can never renew again; false if it changed meanwhile. */
  private async fence(record: NodeRecord, etag: string): Promise<boolean> {
    try {
      const fenced: NodeRecord = { ...record, state: 'fenced' };
      await this.store.put(nodeKey(record.nodeId), encodeNode(fenced), { ifMatch: etag });
      this.nodes.invalidate();
      this.nodes.observe(fenced);
      return true;
    } catch (e) {
      if (isKeepworkError(e, ErrorCode.PreconditionFailed)) return false;
      throw e;
    }
  }
}

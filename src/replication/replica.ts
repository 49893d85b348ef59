/**
 * One actor's replica: keeps the bucket's chain in step with the local database (docs/architecture.md).
 *
 *   take()        before the database opens: bring the local file in line with the chain
 *                 (replica-take.ts: nothing to do · apply missing deltas · set aside as .replaced +
 *                 restore · first upload of a local-only file)
 *   committed()   after each commit: one upload at most every replicationDelayMs (group commit)
 *   sync()        upload everything committed so far; resolves once it is in the bucket. Callers
 *                 while an upload is in flight share the next one (group commit of durable
 *                 calls: one link carries every commit made meanwhile)
 *   tombstone()   the actor was deleted: what was committed before, then a tombstone link —
 *                 the end of this replica's uploads (a sync queued behind it uploads nothing)
 *   release()     flush, checkpoint, sidecar: the file equals the head
 *
 * Where the local copy stands against the chain is the replica's `ChainPosition`
 * (chain-position.ts): the take path sets it, every upload here moves it on.
 *
 * Uploads run one at a time per actor (`queue`). A conflict (someone else wrote our next seq: a
 * late commit or a rival), a persistent failure or a failed invariant gives the actor up: `givenUp`
 * is set, every later sync rejects with it, and the owner drops the open database; the next take
 * restores.
 * What the alarm index needs of the uploads (deletes after a link, the owner fence) is `index`
 * (index-upload.ts). Time, randomness and the store are injected.
 */
import type { TimerHandle } from '../core/clock.js';
import { ActorGivenUp, ErrorCode, LeaseLost, isKeepworkError } from '../core/errors.js';
import { invariantFailure } from '../core/invariant.js';
import { formatAddress, type ActorAddress } from '../core/address.js';
import { createLink, deleteLinksBelow, type RetryDeps } from './chain.js';
import { ChainPosition } from './chain-position.js';
import { IndexUpload, type ReplacedEntry } from './index-upload.js';
import { diffImages, forBucket, headerPageSize } from './memory-image.js';
import { encodeLink, type LinkKind } from './link.js';
import { committedImage } from './image.js';
import { checkpointDue, nextLinkKind, pruneBelow } from './link-policy.js';
import type { ReplicaDb, ReplicaDeps } from './replica-deps.js';
import { take, takeInMemory, takeNew, type TakeContext, type TakeResult } from './replica-take.js';
import { removeSidecar, writeSidecar } from './sidecar.js';
import { captureWal, encodeDelta, type WalCapture, type WalCursor, type WalFromStart } from './wal.js';

export type { ReplicaDb, ReplicaDeps, ReplicaSettings } from './replica-deps.js';
export type { TakeResult } from './replica-take.js';

export class ActorReplica {
  givenUp: Error | undefined;
  /** Where the local copy stands against the chain (set by the take path, moved on by each upload). */
  private readonly pos = new ChainPosition();
  /** The WAL's commits from its start to the last landed capture's cursor (wal.ts `fromStart`), when known. */
  private walFromStart: WalFromStart | undefined;
  private closed = false;
  /** A link was uploaded by this replica, i.e. under its hold (the history ends with our own). */
  uploadedUnderHold = false;
  /**
   * The take found nothing in the bucket and the database was created for this hold (a new local
   * file, or a new actor in memory): it holds no commit anyone was told of, so its first upload
   * waits for its first event's commit.
   */
  newFile = false;
  /** The alarm index's part of the uploads: entries deleted after a link, the owner fence. */
  readonly index: IndexUpload;
  private db: ReplicaDb | undefined;
  private queue: Promise<void> = Promise.resolve();
  /** The upload queued behind the one in flight, not yet captured: later `sync` callers join it. */
  private next: Promise<void> | undefined;
  /** Closed holding commits the bucket does not have (dropped, or given up): no `sync` may resolve. */
  private lost: Error | undefined;
  /** The tombstone is queued: the chain of this incarnation ends with it, nothing is uploaded after it. */
  private ended = false;
  private timer: TimerHandle | undefined;
  /** The hold generation of the event using the replica now (`usedUnder`). */
  private holdInUse: number;

  /** The node's epoch when the replica was made: its hold is of that epoch, so it writes only while the lease is too. */
  readonly epoch: number;

  constructor(
    private readonly deps: ReplicaDeps,
    readonly address: ActorAddress,
    readonly dbPath: string,
    /** The hold generation this replica writes under (written into every link). */
    readonly generation: number,
  ) {
    this.epoch = deps.writer.epoch;
    this.holdInUse = generation;
    this.index = new IndexUpload(deps, this);
  }

  /** An event of the hold of `generation` uses the replica (ActorSlots.acquire: a replica of another hold is taken anew). */
  usedUnder(generation: number): void {
    this.holdInUse = generation;
  }

  /** LeaseView: the lease is valid and still of this replica's epoch (a rejoined node's old replicas never write). */
  private leaseValid(): boolean {
    return this.deps.leaseValid() && this.deps.writer.epoch === this.epoch;
  }

  /** Commits in the local file past the sidecar's cursor that take() adopted (uploaded from start()). */
  get unuploaded(): number {
    return this.pos.unuploaded;
  }

  /** The seq of the chain's head as this replica knows it (0: none). */
  get headSeq(): number {
    return this.pos.head?.seq ?? 0;
  }

  /** This replica's take found nothing in the bucket for the actor (a local-only or new actor). */
  get foundNothing(): boolean {
    return this.pos.foundNothing;
  }

  /** Before the database opens: brings the local file in line with the chain (replica-take.ts); `seqs`, a listing of it already made. */
  take(seqs?: number[]): Promise<TakeResult> {
    return take(this.takeContext(), seqs);
  }

  /**
   * An actor that the event may create, with no local file: when the bucket has nothing for it, it
   * starts in memory as `empty`; otherwise the chain's listing, for `take` (replica-take.ts).
   */
  takeNew(empty: Buffer, listed?: number[]): Promise<{ image: Buffer } | { seqs: number[] }> {
    return takeNew(this.takeContext(), empty, listed);
  }

  /**
   * Takes the actor into memory instead of a local file (an actor restored only to run an alarm):
   * the head's image, ready for `new Database(image)` (replica-take.ts).
   */
  takeInMemory(): Promise<{ state: TakeResult; image?: Buffer }> {
    return takeInMemory(this.takeContext());
  }

  private takeContext(): TakeContext {
    const { deps, address, dbPath, generation, pos } = this;
    return { deps, address, dbPath, generation, pos, saveSidecar: () => this.saveSidecar() };
  }

  /**
   * The image of an actor in memory whose every commit is in the bucket, as a local file holds it
   * (WAL mode), for `toFile`. Throws if anything committed is not uploaded yet.
   */
  fileImage(db: ReplicaDb): Buffer {
    const m = this.pos.memory;
    if (!m || this.givenUp || this.pos.head === null) throw invariantFailure(`${this.name()} cannot go to a file now`);
    const now = db.serialize();
    if (diffImages(m.uploaded, now, m.pageSize) !== null) throw invariantFailure(`${this.name()} holds commits the bucket does not have`);
    return forBucket(now);
  }

  /** The actor left memory for a local file holding the head's image (`fileImage`), its WAL started (`walStarted`). */
  toFile(db: ReplicaDb): void {
    this.pos.memory = null;
    this.attach(db);
    this.walStarted();
  }

  /**
   * The file equals the head (after take() with nothing left to upload, or a move out of memory)
   * and its empty WAL was started with page 1 as it is (actor-db.ts `startWal`): that frame is
   * the head's image, so the cursor starts past it, and the sidecar says so (after a kill it is
   * not a local commit).
   */
  walStarted(): void {
    if (this.pos.memory || this.pos.unuploaded > 0) throw invariantFailure(`${this.name()} started a WAL with commits to upload`);
    this.pos.cursor = captureWal(`${this.dbPath}-wal`, null).cursor;
    this.saveSidecar();
  }

  /**
   * A new actor opened in memory (`takeNew`): what it holds now — an empty database with its
   * address — counts as nothing to upload, so an event that commits nothing uploads nothing, and
   * the first commit goes up as the snapshot of the whole image (link 1).
   */
  attachNew(db: ReplicaDb): void {
    const uploaded = db.serialize();
    this.pos.memory = { pageSize: headerPageSize(uploaded), uploaded, captured: null };
    this.attach(db);
  }

  attach(db: ReplicaDb): void {
    this.db = db;
    this.index.attach(db);
    if (!this.pos.memory) db.pragma('wal_autocheckpoint = 0');
  }

  /** True while the bucket has nothing for this actor (its first upload is still to come). */
  firstUpload(): boolean {
    return this.pos.head === null && !this.pos.deleted;
  }

  /**
   * After the owner indexed the committed alarm: a local-only actor's first upload may go, and so
   * may local commits a previous run of this node never uploaded (take found the head unmoved). A
   * file created by this take uploads with its first event's commit instead (one link, not an
   * empty snapshot first and the event's change after it).
   */
  start(): void {
    const noChain = this.pos.head === null && !this.pos.deleted;
    if (noChain) this.saveFirstSidecar();
    if ((noChain && !this.newFile) || this.pos.unuploaded > 0) this.committed();
  }

  /**
   * Before the first upload: a sidecar at link 0 (nothing uploaded, the whole WAL to capture),
   * under this hold's generation — so that a kill after link 1 landed but before its sidecar was
   * written finds link 1 to be its own upload from this file (ownLinkAfter), not a stranger's.
   */
  private saveFirstSidecar(): void {
    if (this.pos.memory || this.closed) return;
    writeSidecar(this.dbPath, { seq: 0, etag: '', generation: this.generation, cursor: null });
  }

  /** The index could not be brought in line: the actor is given up, nothing more is uploaded. */
  giveUpNow(e: unknown): Error {
    return this.giveUp(e, (this.pos.head?.seq ?? 0) + 1);
  }

  /** True when this node may write for the actor now (LeaseView, and replication healthy). */
  healthy(): boolean {
    return !this.givenUp && !this.closed && this.leaseValid();
  }

  /**
   * A commit happened: schedule a group-commit upload (an actor in memory is synced by its event
   * instead, or schedules its upload itself: pipeline.ts uploadFromMemory).
   */
  committed(): void {
    if (!this.pos.memory) this.uploadSoon();
  }

  /** An upload within the group-commit window, as the worker's load says (upload-pace.ts). */
  uploadSoon(): void {
    if (this.timer || this.givenUp || this.ended) return;
    const { clock, config, pace } = this.deps;
    this.timer = clock.setTimer(pace ? pace.delayMs() : config.replicationDelayMs, () => {
      this.timer = undefined;
      this.sync().catch(() => undefined); // failures are recorded in givenUp and logged
    });
  }

  sync(): Promise<void> {
    if (this.next) return this.next;
    const run = this.queue.then(() => {
      this.next = undefined; // from the capture on, a new commit needs the upload after this one
      return this.flush();
    });
    this.next = run;
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * The actor was deleted: what was committed before goes up, then a tombstone ends the chain, and
   * `deletes` (the index entries the state named) go once it is in the bucket. Nothing is uploaded
   * after it: a group-commit upload scheduled earlier, or a sync queued behind the tombstone,
   * would otherwise follow it with a snapshot of the local file — the deleted state, back as the
   * head. The caller deletes the local files.
   */
  async tombstone(deletes: readonly ReplacedEntry[] = []): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    await this.sync();
    this.ended = true; // everything committed is captured: whatever queues from here on finds the chain ended
    const run = this.queue.then(() => this.upload('tombstone', new Uint8Array(0), 0, 0, null));
    this.queue = run.catch(() => undefined);
    await run;
    removeSidecar(this.dbPath);
    this.index.landed(deletes);
  }

  /** Before closing: everything uploaded, the WAL folded in, the sidecar saying so. */
  async release(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    if (this.givenUp || this.pos.deleted) return;
    await this.sync();
    this.checkpoint(true);
  }

  /**
   * Before the database closes (SQLite folds the WAL into the file on close): if the file holds
   * anything the bucket does not — the actor was given up, or commits were never uploaded — the
   * sidecar goes, so the next take sets the file aside and restores instead of trusting it.
   */
  beforeClose(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
    if (this.pos.deleted || this.pos.memory) return;
    if (this.givenUp || captureWal(`${this.dbPath}-wal`, this.pos.cursor).delta !== null) {
      removeSidecar(this.dbPath);
      this.lost = this.givenUp ?? new ActorGivenUp(`${this.name()} was closed with commits the bucket does not have`);
    }
  }

  private name(): string {
    return formatAddress(this.address);
  }

  private async flush(): Promise<void> {
    if (this.givenUp) throw this.givenUp;
    if (this.lost) throw this.lost; // a durable call waiting here must fail, not be told its commit is up
    if (this.ended) return; // the tombstone's own sync took every commit; nothing follows it
    const db = this.db;
    if (!db || !db.open) return;
    try {
      const m = this.pos.memory;
      const captured: WalCapture = m
        ? { delta: this.pos.captureMemory(m, db.serialize()), cursor: null }
        : captureWal(`${this.dbPath}-wal`, this.pos.cursor, this.walFromStart);
      const first = this.pos.head === null || this.pos.deleted; // a chain (re)starts with a snapshot
      // No frames (no change) — and a new actor in memory that has committed nothing has no chain yet.
      if (!captured.delta && (!first || this.pos.memory)) return;
      const deletes = this.index.captured(db);
      await this.uploadCaptured(captured, first); // if it fails the entries stay: extra ones are harmless
      this.walFromStart = captured.fromStart; // the next capture goes on from its cursor, the link's
      this.index.landed(deletes); // not awaited: a durable reply waits for its link, not for cleanup
    } catch (e) {
      throw isKeepworkError(e, ErrorCode.Internal) && !this.givenUp ? this.giveUpNow(e) : e; // a bug, wherever raised: loudly
    }
  }

  private async uploadCaptured(captured: WalCapture, first: boolean): Promise<void> {
    // A chain's first link is a snapshot whatever the delta weighs: no delta is encoded for it.
    const deltaBytes = captured.delta && !first ? encodeDelta(captured.delta) : undefined;
    const since = {
      linksSinceSnapshot: this.pos.linksSinceSnapshot,
      deltaBytesSinceSnapshot: this.pos.deltaBytesSinceSnapshot,
      snapshotBytes: this.pos.snapshotBytes,
    };
    if (deltaBytes && nextLinkKind(first, deltaBytes.byteLength, since, this.deps.config) === 'delta') {
      const d = captured.delta!;
      return this.upload('delta', deltaBytes, d.pageSize, d.pageCountAfter, captured.cursor);
    }
    // Synchronous since the capture above: no commit can slip in between the two reads. With no
    // cursor (a new file's first link, or the first since a checkpoint) that capture read the WAL
    // from its start, as committedImage would: its frames are the image's, read once. Otherwise
    // its `fromStart` carries every commit since the WAL's start when the captures before it did
    // (a small actor's); only without it is the WAL read from its start again.
    const { image, pageSize, cursor } = this.pos.memory
      ? { image: forBucket(this.pos.memory.captured!), pageSize: this.pos.memory.pageSize, cursor: null }
      : committedImage(this.dbPath, this.pos.cursor === null ? captured : captured.fromStart);
    return this.upload('snapshot', image, pageSize, image.byteLength / pageSize, cursor ?? captured.cursor);
  }

  private async upload(kind: LinkKind, payload: Uint8Array, pageSize: number, pageCount: number, cursor: WalCursor | null): Promise<void> {
    if (this.givenUp) throw this.givenUp;
    const seq = (this.pos.head?.seq ?? 0) + 1;
    if (!this.leaseValid()) throw this.giveUp(new LeaseLost(`no valid lease to upload link ${seq} of ${this.name()}`), seq);
    const { nodeId } = this.deps.writer;
    const epoch = this.epoch;
    const generation = this.generation;
    // A link's generation is its hold's: the take path (replica-take.ts ownLinkAfter) counts a link
    // of this generation as this holder's own, and index entries' R3 trusts the same number.
    if (generation !== this.holdInUse)
      throw this.giveUp(
        invariantFailure(`link ${seq} of ${this.name()} carries generation ${generation}, not its hold's ${this.holdInUse}`),
        seq,
      );
    const atMs = this.deps.clock.now();
    const body = encodeLink({ seq, kind, generation, nodeId, epoch, atMs, pageSize, pageCount }, payload);
    let etag: string;
    try {
      ({ etag } = await createLink(this.deps.store, this.address, seq, body, this.retryDeps()));
    } catch (e) {
      throw this.giveUp(e, seq);
    }
    // A PUT that hung past the lease may have landed after another node took the actor over — in a
    // seq its retention had already deleted, below that node's head: nothing may count it as up.
    if (!this.leaseValid()) throw this.giveUp(new LeaseLost(`link ${seq} of ${this.name()} landed after the lease ran out`), seq);
    // Uploads run one at a time: nothing may have moved the head while this link was in flight.
    const headNow = this.pos.head?.seq ?? 0;
    if (seq !== headNow + 1)
      throw this.giveUp(invariantFailure(`link ${seq} of ${this.name()} landed on head ${headNow}, not ${seq - 1}`), seq);
    this.pos.landed({ seq, etag, kind, bytes: payload.byteLength, atMs, cursor });
    this.uploadedUnderHold = true;
    this.saveSidecar();
    this.checkpoint(false);
    await this.prune();
  }

  /** Retention (link-policy.ts pruneBelow): links no restore needs any more are deleted. */
  private async prune(): Promise<void> {
    const below = pruneBelow(this.pos.snapshots, this.deps.clock.now(), this.deps.config);
    if (below === undefined) return;
    try {
      const n = await deleteLinksBelow(this.deps.store, this.address, below);
      this.pos.snapshots = this.pos.snapshots.filter((s) => s.seq >= below);
      this.saveSidecar();
      if (n > 0) this.deps.log.debug({ actor: this.name(), below, links: n }, 'old links deleted (retention)');
    } catch (e) {
      this.deps.log.warn({ actor: this.name(), err: e }, 'deleting old links failed; retrying after the next snapshot');
    }
  }

  /** Folds the WAL into the database when due (or `force`d), only if nothing is left to capture. */
  private checkpoint(force: boolean): void {
    const db = this.db;
    if (!db || !db.open || db.inTransaction || this.pos.memory) return;
    const due = force || checkpointDue(this.pos.linksSinceCheckpoint, this.pos.cursor?.offset ?? 0, this.deps.config);
    if (!due || captureWal(`${this.dbPath}-wal`, this.pos.cursor).delta !== null) return;
    db.pragma('wal_checkpoint(TRUNCATE)');
    this.pos.cursor = null;
    this.pos.linksSinceCheckpoint = 0;
    this.saveSidecar();
  }

  private saveSidecar(): void {
    if (this.closed || this.pos.memory) return; // after close an upload may still land: the sidecar stays gone
    const side = this.pos.sidecar(this.generation);
    if (side) writeSidecar(this.dbPath, side);
  }

  private giveUp(e: unknown, seq: number): Error {
    const err = isKeepworkError(e)
      ? (e as unknown as Error)
      : new ActorGivenUp(`uploading link ${seq} of ${this.name()} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    this.givenUp = err;
    const why = isKeepworkError(e, ErrorCode.Internal) ? 'an invariant failed' : 'its chain could not be extended';
    this.deps.log.error({ actor: this.name(), seq, err: e }, `actor given up: ${why}`);
    return err;
  }

  private retryDeps(): RetryDeps {
    const { clock, random, config } = this.deps;
    return { clock, random, attemptsMax: config.storeAttemptsMax, retryBaseMs: config.storeRetryBaseMs };
  }
}

/**
 * One actor's replica: keeps the bucket's chain in step with the local database (DESIGN.md §4).
 *
 *   take()        before the database opens: bring the local file in line with the chain
 *                 (nothing to do · apply missing deltas · set aside as .replaced + restore ·
 *                 first upload of a local-only file)
 *   committed()   after each commit: one upload at most every replicationDelayMs (group commit)
 *   sync()        upload everything committed so far; resolves once it is in the bucket
 *   tombstone()   the actor was deleted: a tombstone link
 *   release()     flush, checkpoint, sidecar: the file equals the head
 *
 * Uploads run one at a time per actor (`queue`). A conflict (someone else wrote our next seq: a
 * late commit or a rival) or a persistent failure gives the actor up: `givenUp` is set, every
 * later sync rejects with it, and the owner drops the open database; the next take restores.
 * Time, randomness and the store are injected.
 */
import Database from 'better-sqlite3';
import { closeSync, existsSync, fstatSync, openSync, readSync, renameSync, rmSync } from 'node:fs';
import type { Clock, TimerHandle } from '../core/clock.js';
import { ActorGivenUp, LeaseLost, isKeepworkError } from '../core/errors.js';
import { invariantFailure } from '../core/invariant.js';
import type { Logger } from '../core/logger.js';
import type { Random } from '../core/random.js';
import { formatAddress, type ActorAddress } from '../core/address.js';
import type { Settings } from '../core/config.js';
import type { ObjectStore } from '../store/types.js';
import { createLink, deleteLinksBelow, fsyncFile, listChain, restoreChain, restoreImage, type RetryDeps } from './chain.js';
import { diffImages, forBucket, forMemory, headerPageSize } from './memory-image.js';
import { decodeLink, encodeLink, type LinkKind } from './link.js';
import { committedImage } from './image.js';
import { checkpointDue, nextLinkKind } from './link-policy.js';
import { readSidecar, removeSidecar, writeSidecar, type Sidecar } from './sidecar.js';
import { linkKey } from './state-keys.js';
import { applyDelta, captureWal, decodeDelta, encodeDelta, type WalCursor } from './wal.js';

export type ReplicaSettings = Settings<
  | 'replicationDelayMs'
  | 'snapshotEveryLinks'
  | 'checkpointEveryLinks'
  | 'checkpointWalBytes'
  | 'linkRetentionMs'
  | 'storeAttemptsMax'
  | 'storeRetryBaseMs'
>;

export interface ReplicaDeps {
  store: ObjectStore;
  clock: Clock;
  random: Random;
  config: ReplicaSettings;
  log: Logger;
  /** This node; `epoch` is the one its lease is for now (it changes when a fenced node rejoins). */
  writer: { readonly nodeId: string; readonly epoch: number };
  /** LeaseView: true while this node's lease is valid (the hold's generation is the replica's). */
  leaseValid(): boolean;
  /** Where replaced index entries go once their link is up (batched across actors); absent: one deleteMany per upload. */
  deletes?: { add(keys: readonly string[]): void; flush(): Promise<void> };
}

/**
 * What the replica needs of the actor's open database (better-sqlite3's `Database` has it): the
 * worker owns the handle; the replica turns off autocheckpoint, writes the owner fence and
 * checkpoints when no transaction is open.
 */
export interface ReplicaDb {
  readonly open: boolean;
  readonly inTransaction: boolean;
  pragma(source: string): unknown;
  prepare(source: string): { run(...params: unknown[]): unknown };
  /** The whole database image (used for a database kept in memory). */
  serialize(): Buffer;
}

/** An actor kept in memory: the image the bucket's head equals, and the one captured for the next link. */
interface InMemory {
  pageSize: number;
  uploaded: Buffer;
  captured: Buffer | null;
}

export type TakeResult = 'ready' | 'absent' | 'deleted';

interface Head {
  seq: number;
  etag: string;
}

export class ActorReplica {
  givenUp: Error | undefined;
  private head: Head | null = null;
  private cursor: WalCursor | null = null;
  private deleted = false;
  private linksSinceSnapshot = 0;
  private linksSinceCheckpoint = 0;
  private deltaBytesSinceSnapshot = 0;
  private snapshotBytes = 0;
  private snapshots: { seq: number; atMs: number }[] = [];
  private closed = false;
  /** Commits in the local file past the sidecar's cursor that take() adopted (uploaded from start()). */
  unuploaded = 0;
  /** This replica's take found nothing in the bucket for the actor (a local-only or new actor). */
  foundNothing = false;
  /** A link was uploaded by this replica, i.e. under its hold (the history ends with our own). */
  uploadedUnderHold = false;
  /** Index entries to DELETE once the next link is in the bucket (the state no longer names them). */
  private pendingDeletes: string[] = [];
  private db: ReplicaDb | undefined;
  /** Set when the actor lives in memory (takeInMemory): no local file, WAL or sidecar. */
  private memory: InMemory | null = null;
  private queue: Promise<void> = Promise.resolve();
  private timer: TimerHandle | undefined;

  /** The node's epoch when the replica was made: its hold is of that epoch, so it writes only while the lease is too. */
  private readonly epoch: number;

  constructor(
    private readonly deps: ReplicaDeps,
    readonly address: ActorAddress,
    readonly dbPath: string,
    /** The hold generation this replica writes under (written into every link). */
    readonly generation: number,
  ) {
    this.epoch = deps.writer.epoch;
  }

  /** LeaseView: the lease is valid and still of this replica's epoch (a rejoined node's old replicas never write). */
  private leaseValid(): boolean {
    return this.deps.leaseValid() && this.deps.writer.epoch === this.epoch;
  }

  async take(): Promise<TakeResult> {
    const seqs = await listChain(this.deps.store, this.address);
    const local = existsSync(this.dbPath);
    const side = readSidecar(this.dbPath);
    if (seqs.length === 0) return this.takeEmptyBucket(local, side);
    const headSeq = seqs[seqs.length - 1]!;
    const trusted = local && side !== undefined && this.walIntact(side);
    if (trusted && side.seq === headSeq) {
      // Only a trusted local copy needs the head's etag (a node taking an actor it never ran
      // restores from the links at once: one request less per takeover).
      const head = await this.deps.store.head(linkKey(this.address, headSeq));
      if (!head) throw new ActorGivenUp(`head link ${headSeq} of ${this.name()} vanished during take`);
      // The head is still the one the file was last in line with: commits past the sidecar's
      // cursor (a kill before their upload) go up as the next link, from start().
      if (side.etag === head.etag) return this.adopt(side, this.unuploadedCommits(side));
    }
    const unuploaded = trusted ? this.unuploadedCommits(side) : 0;
    if (trusted && unuploaded > 0 && side.seq + 1 === headSeq) {
      const own = await this.ownLinkAfter(side, headSeq);
      if (own) return this.adoptPast(side, own, unuploaded);
    }
    if (trusted && side.seq < headSeq && unuploaded === 0) {
      const caught = await this.catchUp(side, seqs);
      if (caught) return caught;
    }
    if (local) this.setAside(trusted ? unuploaded : undefined, headSeq);
    return this.restoreFully(seqs);
  }

  /** Local commits the sidecar's cursor has not reached (never uploaded, as far as the sidecar knows). */
  private unuploadedCommits(side: Sidecar): number {
    const captured = captureWal(`${this.dbPath}-wal`, side.cursor);
    return captured.delta === null ? 0 : (captured.commits ?? 1);
  }

  /**
   * The head is one link past the sidecar and was written by this node under the sidecar's hold
   * generation: the previous run of this node uploaded it from this very file and died before
   * its sidecar said so. One generation is one holder's, and that holder writes from one local
   * file in order, so the link holds a prefix of the commits past the cursor: the file holds all
   * of the head and more. (Another owner since would have ended the history with a link of its
   * own — the owner fence — so the head would not be ours.)
   */
  private async ownLinkAfter(side: Sidecar, headSeq: number): Promise<Head | undefined> {
    const obj = await this.deps.store.get(linkKey(this.address, headSeq));
    if (!obj) return undefined;
    const { header } = decodeLink(obj.body, headSeq);
    const ours = header.nodeId === this.deps.writer.nodeId && header.generation === side.generation && header.kind !== 'tombstone';
    return ours ? { seq: headSeq, etag: obj.etag } : undefined;
  }

  /**
   * Takes the actor into memory instead of a local file (an actor restored only to run an alarm):
   * the head's image, ready for `new Database(image)`; nothing is written to the local disk, and
   * every commit is uploaded from `db.serialize()` (the pages that differ from the head's image).
   */
  async takeInMemory(): Promise<{ state: TakeResult; image?: Buffer }> {
    const seqs = await listChain(this.deps.store, this.address);
    if (seqs.length === 0) {
      this.foundNothing = true;
      return { state: 'absent' };
    }
    const result = await restoreImage(this.deps.store, this.address, { seqs });
    if (result.state === 'empty') return { state: 'absent' };
    this.head = { seq: result.head.seq, etag: result.head.etag };
    if (result.state === 'deleted') {
      this.deleted = true;
      return { state: 'deleted' };
    }
    if (!('image' in result)) throw new Error('restoreImage returned no image');
    const image = forMemory(result.image);
    this.memory = { pageSize: headerPageSize(image), uploaded: image, captured: null };
    this.linksSinceSnapshot = result.links - 1;
    this.snapshotBytes = result.base.header.size;
    this.snapshots = [{ seq: result.base.seq, atMs: result.base.header.atMs }];
    return { state: 'ready', image };
  }

  /** True when the actor lives in memory (see takeInMemory). */
  get inMemory(): boolean {
    return this.memory !== null;
  }

  attach(db: ReplicaDb): void {
    this.db = db;
    if (!this.memory) db.pragma('wal_autocheckpoint = 0');
  }

  /** True while the bucket has nothing for this actor (its first upload is still to come). */
  firstUpload(): boolean {
    return this.head === null && !this.deleted;
  }

  /**
   * After the owner indexed the committed alarm: a local-only actor's first upload may go, and so
   * may local commits a previous run of this node never uploaded (take found the head unmoved).
   */
  start(): void {
    if (this.head === null && !this.deleted) this.saveFirstSidecar();
    if ((this.head === null && !this.deleted) || this.unuploaded > 0) this.committed();
  }

  /**
   * Before the first upload: a sidecar at link 0 (nothing uploaded, the whole WAL to capture),
   * under this hold's generation — so that a kill after link 1 landed but before its sidecar was
   * written finds link 1 to be its own upload from this file (ownLinkAfter), not a stranger's.
   */
  private saveFirstSidecar(): void {
    if (this.memory || this.closed) return;
    writeSidecar(this.dbPath, { seq: 0, etag: '', generation: this.generation, cursor: null });
  }

  /**
   * `key` is named by no state from the last commit on: delete it once a link holding that commit
   * is in the bucket (ADR R2). Call it after the commit, so the next capture includes it.
   */
  deleteAfterUpload(key: string): void {
    this.pendingDeletes.push(key);
  }

  /**
   * The owner fence (ADR R2): before removing entries as stale, an owner that has uploaded nothing
   * under its hold ends the history with a one-line change of its own, so no earlier owner's late
   * upload can still become the state. At most one extra upload per hold.
   */
  async fence(): Promise<void> {
    if (this.uploadedUnderHold) return;
    const db = this.db;
    if (!db || db.inTransaction) throw new ActorGivenUp(`cannot fence ${this.name()} now`);
    db.prepare("INSERT INTO _keep_meta (key, value) VALUES ('owner_fence', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(
      `${this.deps.writer.nodeId}/${this.epoch}/${this.generation}/${this.head?.seq ?? 0}`, // on top of this head: never the value it holds
    );
    await this.sync();
    if (!this.uploadedUnderHold) throw this.giveUpNow(new ActorGivenUp(`the owner fence of ${this.name()} uploaded nothing`));
  }

  /** The index could not be brought in line: the actor is given up, nothing more is uploaded. */
  giveUpNow(e: unknown): Error {
    return this.giveUp(e, (this.head?.seq ?? 0) + 1);
  }

  /** True when this node may write for the actor now (LeaseView, and replication healthy). */
  healthy(): boolean {
    return !this.givenUp && !this.closed && this.leaseValid();
  }

  /** A commit happened: schedule a group-commit upload. */
  committed(): void {
    if (this.timer || this.givenUp) return;
    this.timer = this.deps.clock.setTimer(this.deps.config.replicationDelayMs, () => {
      this.timer = undefined;
      this.sync().catch(() => undefined); // failures are recorded in givenUp and logged
    });
  }

  sync(): Promise<void> {
    const run = this.queue.then(() => this.flush());
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The actor was deleted: end its chain with a tombstone, then forget the local files. */
  async tombstone(): Promise<void> {
    await this.sync();
    const run = this.queue.then(() => this.upload('tombstone', new Uint8Array(0), 0, 0, null));
    this.queue = run.catch(() => undefined);
    await run;
    this.deleted = true;
    removeSidecar(this.dbPath);
  }

  /** Before closing: everything uploaded, the WAL folded in, the sidecar saying so. */
  async release(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    if (this.givenUp || this.deleted) return;
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
    if (this.deleted || this.memory) return;
    if (this.givenUp || captureWal(`${this.dbPath}-wal`, this.cursor).delta !== null) removeSidecar(this.dbPath);
  }

  private name(): string {
    return formatAddress(this.address);
  }

  private takeEmptyBucket(local: boolean, side: Sidecar | undefined): TakeResult {
    this.foundNothing = true;
    if (!local) return 'absent';
    if (side && side.seq > 0)
      this.deps.log.warn(
        { actor: this.name(), sidecarSeq: side.seq },
        'the bucket has no chain for a local actor with a sidecar; uploading it as link 1',
      );
    this.head = null; // start() schedules the first upload, a snapshot, once the alarm is indexed (R4)
    return 'ready';
  }

  private adopt(side: Sidecar, unuploaded: number): TakeResult {
    this.head = { seq: side.seq, etag: side.etag };
    this.unuploaded = unuploaded;
    this.cursor = side.cursor;
    this.linksSinceSnapshot = side.linksSinceSnapshot ?? this.deps.config.snapshotEveryLinks;
    this.deltaBytesSinceSnapshot = side.deltaBytesSinceSnapshot ?? 0;
    this.snapshotBytes = side.snapshotBytes ?? 0;
    this.snapshots = side.snapshots ?? [];
    // Under this hold's generation from now on: should the next upload land and this run die
    // before its sidecar is written, the next take knows that link for its own (ownLinkAfter).
    if (side.generation !== this.generation) this.saveSidecar();
    return 'ready';
  }

  /** The head is this node's own upload from this file past the sidecar (ownLinkAfter): the next link is a snapshot of the file. */
  private adoptPast(side: Sidecar, head: Head, unuploaded: number): TakeResult {
    this.adopt(side, unuploaded);
    this.head = head;
    this.linksSinceSnapshot = this.deps.config.snapshotEveryLinks; // the delta past the cursor overlaps the head: a snapshot
    // The file up to the cursor is the sidecar's link, the head a prefix of what follows: a delta
    // from the cursor applied to the head gives the file too, so the sidecar may name the head.
    this.saveSidecar();
    this.deps.log.warn(
      { actor: this.name(), sidecarSeq: side.seq, head: head.seq, commits: unuploaded },
      'local copy is ahead of its own last upload (the sidecar was not written); uploading it as the next link',
    );
    return 'ready';
  }

  /**
   * A sidecar with a cursor describes a WAL: if that WAL is gone, shorter, or of another
   * generation (salts), something folded it into the file (a read-write open and close outside
   * this replica) and the file may hold commits the bucket never got: it cannot be trusted.
   */
  private walIntact(side: Sidecar): boolean {
    const c = side.cursor;
    if (!c) return true;
    const header = readWalHeader(`${this.dbPath}-wal`);
    return header !== undefined && header.size >= c.offset && header.salt1 === c.salt1 && header.salt2 === c.salt2;
  }

  /** Applies the links after the sidecar's seq onto the local file; undefined if it cannot. */
  private async catchUp(side: Sidecar, seqs: number[]): Promise<TakeResult | undefined> {
    const missing = seqs.filter((s) => s > side.seq);
    if (missing[0] !== side.seq + 1 || missing.some((s, i) => s !== side.seq + 1 + i)) return undefined;
    // The local file must be this chain's link side.seq (not a link of another bucket's chain, as
    // a joining node's sidecar is): otherwise the deltas would be applied to a stranger.
    const base = await this.deps.store.head(linkKey(this.address, side.seq));
    if (!base || base.etag !== side.etag) return undefined;
    const links = [];
    for (const seq of missing) {
      const obj = await this.deps.store.get(linkKey(this.address, seq));
      if (!obj) return undefined;
      const link = decodeLink(obj.body, seq);
      if (link.header.kind !== 'delta') return undefined; // a snapshot or tombstone: restore fully
      links.push({ seq, etag: obj.etag, link });
    }
    foldWal(this.dbPath);
    for (const { link } of links) applyDelta(this.dbPath, decodeDelta(link.payload));
    fsyncFile(this.dbPath);
    const top = links[links.length - 1]!;
    this.head = { seq: top.seq, etag: top.etag };
    this.cursor = null;
    this.linksSinceSnapshot = this.deps.config.snapshotEveryLinks; // unknown: the next link is a snapshot
    this.saveSidecar();
    this.deps.log.info({ actor: this.name(), from: side.seq, to: top.seq }, 'applied missing links onto the local copy');
    return 'ready';
  }

  /**
   * `dropped`: the local commits the bucket never got (undefined: unknown, the sidecar is missing
   * or its WAL was folded); they stay in the `.replaced` file.
   */
  private setAside(dropped: number | undefined, headSeq: number): void {
    const aside = `${this.dbPath}.replaced`;
    for (const suffix of ['', '-wal', '-shm']) {
      if (existsSync(this.dbPath + suffix)) renameSync(this.dbPath + suffix, aside + suffix);
    }
    removeSidecar(this.dbPath);
    const fields = { actor: this.name(), aside, head: headSeq, droppedCommits: dropped ?? 'unknown' };
    if (dropped === 0) this.deps.log.info(fields, 'local copy is behind the bucket; set aside and restoring the bucket’s state');
    else
      this.deps.log.warn(
        fields,
        `the bucket's head moved on past the local copy; set aside with ${dropped ?? 'an unknown number of'} commits the bucket never got, restoring the bucket’s state`,
      );
  }

  private async restoreFully(seqs: number[]): Promise<TakeResult> {
    const tmp = `${this.dbPath}.restore`;
    const result = await restoreChain(this.deps.store, this.address, tmp, { seqs });
    if (result.state === 'empty') return 'absent';
    this.head = { seq: result.head.seq, etag: result.head.etag };
    if (result.state === 'deleted') {
      this.deleted = true;
      rmSync(tmp, { force: true });
      return 'deleted';
    }
    for (const suffix of ['-wal', '-shm']) rmSync(this.dbPath + suffix, { force: true });
    renameSync(tmp, this.dbPath);
    this.cursor = null;
    this.linksSinceSnapshot = result.links - 1;
    this.deltaBytesSinceSnapshot = 0;
    this.snapshotBytes = result.base.header.size;
    this.snapshots = [{ seq: result.base.seq, atMs: result.base.header.atMs }];
    this.saveSidecar();
    return 'ready';
  }

  private async flush(): Promise<void> {
    if (this.givenUp) throw this.givenUp;
    const db = this.db;
    if (!db || !db.open) return;
    const captured = this.memory ? this.captureMemory(db, this.memory) : captureWal(`${this.dbPath}-wal`, this.cursor);
    const first = this.head === null || this.deleted; // a chain (re)starts with a snapshot
    if (!captured.delta && !first) return; // no frames: no change
    const deletes = this.pendingDeletes.splice(0); // registered after commits this capture holds
    await this.uploadCaptured(captured, first); // if it fails the entries stay: extra ones are harmless
    void this.deleteEntries(deletes); // not awaited: a durable reply waits for its link, not for cleanup
  }

  /** The pages the in-memory database changed since the head's image. */
  private captureMemory(db: ReplicaDb, m: InMemory): ReturnType<typeof captureWal> {
    m.captured = db.serialize();
    return { delta: diffImages(m.uploaded, m.captured, m.pageSize), cursor: null };
  }

  private async deleteEntries(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    if (this.deps.deletes) return this.deps.deletes.add(keys);
    try {
      await this.deps.store.deleteMany(keys);
    } catch (e) {
      this.deps.log.warn(
        { actor: this.name(), keys, err: e },
        'deleting replaced index entries failed; they stay until a delivery removes them',
      );
    }
  }

  private async uploadCaptured(captured: ReturnType<typeof captureWal>, first: boolean): Promise<void> {
    const deltaBytes = captured.delta ? encodeDelta(captured.delta) : undefined;
    const since = {
      linksSinceSnapshot: this.linksSinceSnapshot,
      deltaBytesSinceSnapshot: this.deltaBytesSinceSnapshot,
      snapshotBytes: this.snapshotBytes,
    };
    if (deltaBytes && nextLinkKind(first, deltaBytes.byteLength, since, this.deps.config) === 'delta') {
      const d = captured.delta!;
      return this.upload('delta', deltaBytes, d.pageSize, d.pageCountAfter, captured.cursor);
    }
    // Synchronous since the capture above: no commit can slip in between the two reads.
    const { image, pageSize, cursor } = this.memory
      ? { image: forBucket(this.memory.captured!), pageSize: this.memory.pageSize, cursor: null }
      : committedImage(this.dbPath);
    return this.upload('snapshot', image, pageSize, image.byteLength / pageSize, cursor ?? captured.cursor);
  }

  private async upload(kind: LinkKind, payload: Uint8Array, pageSize: number, pageCount: number, cursor: WalCursor | null): Promise<void> {
    if (this.givenUp) throw this.givenUp;
    const seq = (this.head?.seq ?? 0) + 1;
    if (!this.leaseValid()) throw this.giveUp(new LeaseLost(`no valid lease to upload link ${seq} of ${this.name()}`), seq);
    const { nodeId } = this.deps.writer;
    const epoch = this.epoch;
    const generation = this.generation;
    const atMs = this.deps.clock.now();
    const body = encodeLink({ seq, kind, generation, nodeId, epoch, atMs, pageSize, pageCount }, payload);
    let etag: string;
    try {
      ({ etag } = await createLink(this.deps.store, this.address, seq, body, this.retryDeps()));
    } catch (e) {
      throw this.giveUp(e, seq);
    }
    // Uploads run one at a time: nothing may have moved the head while this link was in flight.
    const headNow = this.head?.seq ?? 0;
    if (seq !== headNow + 1)
      throw this.giveUp(invariantFailure(`link ${seq} of ${this.name()} landed on head ${headNow}, not ${seq - 1}`), seq);
    this.head = { seq, etag };
    this.uploadedUnderHold = true;
    if (this.memory?.captured) this.memory.uploaded = this.memory.captured;
    this.cursor = cursor ?? this.cursor;
    this.deleted = kind === 'tombstone';
    this.countLink(kind, payload.byteLength);
    if (kind === 'snapshot') this.snapshots = [...this.snapshots, { seq, atMs }].slice(-3);
    this.saveSidecar();
    this.checkpoint(false);
    await this.prune();
  }

  /**
   * Retention: links before a snapshot that is not the newest, and older than linkRetentionMs,
   * are no longer needed by any restore (nor by a point-in-time restore within the retention).
   */
  private async prune(): Promise<void> {
    const cutoff = this.deps.clock.now() - this.deps.config.linkRetentionMs;
    const older = this.snapshots.slice(0, -1).filter((s) => s.atMs <= cutoff);
    const keepFrom = older[older.length - 1];
    if (!keepFrom) return;
    try {
      const n = await deleteLinksBelow(this.deps.store, this.address, keepFrom.seq);
      this.snapshots = this.snapshots.filter((s) => s.seq >= keepFrom.seq);
      this.saveSidecar();
      if (n > 0) this.deps.log.debug({ actor: this.name(), below: keepFrom.seq, links: n }, 'old links deleted (retention)');
    } catch (e) {
      this.deps.log.warn({ actor: this.name(), err: e }, 'deleting old links failed; retrying after the next snapshot');
    }
  }

  private countLink(kind: LinkKind, bytes: number): void {
    this.linksSinceCheckpoint++;
    if (kind === 'snapshot') {
      this.linksSinceSnapshot = 0;
      this.deltaBytesSinceSnapshot = 0;
      this.snapshotBytes = bytes;
    } else {
      this.linksSinceSnapshot++;
      this.deltaBytesSinceSnapshot += bytes;
    }
  }

  /** Folds the WAL into the database when due (or `force`d), only if nothing is left to capture. */
  private checkpoint(force: boolean): void {
    const db = this.db;
    if (!db || !db.open || db.inTransaction || this.memory) return;
    const due = force || checkpointDue(this.linksSinceCheckpoint, this.cursor?.offset ?? 0, this.deps.config);
    if (!due || captureWal(`${this.dbPath}-wal`, this.cursor).delta !== null) return;
    db.pragma('wal_checkpoint(TRUNCATE)');
    this.cursor = null;
    this.linksSinceCheckpoint = 0;
    this.saveSidecar();
  }

  private saveSidecar(): void {
    if (!this.head || this.closed || this.memory) return; // after close an upload may still land: the sidecar stays gone
    writeSidecar(this.dbPath, {
      seq: this.head.seq,
      etag: this.head.etag,
      generation: this.generation,
      cursor: this.cursor,
      linksSinceSnapshot: this.linksSinceSnapshot,
      deltaBytesSinceSnapshot: this.deltaBytesSinceSnapshot,
      snapshotBytes: this.snapshotBytes,
      snapshots: this.snapshots,
    });
  }

  private giveUp(e: unknown, seq: number): Error {
    const err = isKeepworkError(e)
      ? (e as unknown as Error)
      : new ActorGivenUp(`uploading link ${seq} of ${this.name()} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    this.givenUp = err;
    this.deps.log.error({ actor: this.name(), seq, err: e }, 'actor given up: its chain could not be extended');
    return err;
  }

  private retryDeps(): RetryDeps {
    const { clock, random, config } = this.deps;
    return { clock, random, attemptsMax: config.storeAttemptsMax, retryBaseMs: config.storeRetryBaseMs };
  }
}

function readWalHeader(walPath: string): { size: number; salt1: number; salt2: number } | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(walPath, 'r');
    const size = fstatSync(fd).size;
    if (size < 32) return undefined;
    const b = Buffer.alloc(32);
    readSync(fd, b, 0, 32, 0);
    return { size, salt1: b.readUInt32BE(16), salt2: b.readUInt32BE(20) };
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Folds a closed database's WAL into its file (open, checkpoint, close). */
function foldWal(dbPath: string): void {
  if (!existsSync(`${dbPath}-wal`)) return;
  const db = new Database(dbPath);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

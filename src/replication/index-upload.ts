/**
 * The alarm index's part of one actor's uploads (docs/alarm-index.md, "The owner's sequencing"):
 * what rides on the replica's links (replica.ts) without being replication.
 *
 *   listed(value)          the owner PUT the entry `value` names (alarm_indexed's form): a link may
 *                          name it from now on (R1, R4: the entry before the upload that names it)
 *   deleteAfterUpload(e)   e is named by no state from the last commit on (R2): DELETE it once a
 *                          link holding that commit is in the bucket; never a newer owner's (R3)
 *   captured(db)           at the capture of a link: the entry its state names was listed; hands
 *                          back the deletes that link carries
 *   landed(deletes)        that link is in the bucket: the deletes go out (not awaited; a failure
 *                          leaves extra entries, which a delivery removes later)
 *   fence()                the owner fence (R2): an owner that has uploaded nothing under its hold
 *                          ends the history with a one-line change of its own first
 *
 *   event: PUT ─▶ listed ─▶ alarm_indexed ─▶ COMMIT ─▶ deleteAfterUpload
 *   replica: capture ─▶ captured ─▶ link up ─▶ landed ─▶ DELETE
 *
 * Entries are opaque here: alarms/keys.ts builds keys and alarm_indexed values (replication sits
 * below alarms). A broken rule is a bug (an invariant): the actor is given up there, before
 * anything deletes or names the wrong entry.
 */
import { ActorGivenUp } from '../core/errors.js';
import { formatAddress, type ActorAddress } from '../core/address.js';
import { invariantFailure } from '../core/invariant.js';
import { preparedOnce, type ReplicaDb, type ReplicaDeps } from './replica-deps.js';

/** An index entry to delete: its key and the generation of the owner that listed it (null: a legacy entry). */
export interface ReplacedEntry {
  readonly key: string;
  readonly generation: number | null;
}

/** What the index's part needs of its actor's replica. */
export interface IndexedReplica {
  readonly address: ActorAddress;
  /** The hold generation the replica writes under. */
  readonly generation: number;
  /** The node's epoch the hold is of. */
  readonly epoch: number;
  /** The seq of the chain's head as the replica knows it (0: none). */
  readonly headSeq: number;
  /** A link was uploaded under this hold (the history ends with the owner's own). */
  readonly uploadedUnderHold: boolean;
  sync(): Promise<void>;
  giveUpNow(e: unknown): Error;
}

/** Values listed between two checks at most (see `captured`); past it, one check is skipped. */
const LISTED_MAX = 64;

const READ_NAMED = "SELECT value FROM _keep_meta WHERE key = 'alarm_indexed'";
const WRITE_FENCE = "INSERT INTO _keep_meta (key, value) VALUES ('owner_fence', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value";

export class IndexUpload {
  private db: ReplicaDb | undefined;
  /** Entries to DELETE once the next link is in the bucket. */
  private pending: ReplacedEntry[] = [];
  /** What alarm_indexed said at the last check, or when the replica took the actor (undefined: not known). */
  private named: string | undefined;
  /** The alarm_indexed values of the entries this owner listed since. */
  private readonly listedSince = new Set<string>();

  constructor(
    private readonly deps: ReplicaDeps,
    private readonly replica: IndexedReplica,
  ) {}

  /** The actor's database; the first one says which entry the state names as the replica took it. */
  attach(db: ReplicaDb): void {
    if (!this.db) this.named = readNamed(db);
    this.db = db;
  }

  /** The owner PUT the entry that alarm_indexed `value` names, and records it next. */
  listed(value: string): void {
    if (this.listedSince.size >= LISTED_MAX) {
      this.named = undefined; // bounded: the next check is skipped, the ones after it hold again
      this.listedSince.clear();
    }
    this.listedSince.add(value);
  }

  /** `entry` is named by no state from the last commit on: call it after the commit, so the next capture includes it. */
  deleteAfterUpload(entry: ReplacedEntry): void {
    // R3: an entry listed under a generation above this owner's is a newer owner's, and the state
    // that owner uploads may name it. The state this owner runs on names entries of its own
    // generation or below (it restored the state written before its hold), so none is replaced.
    const own = this.replica.generation;
    if (entry.generation !== null && entry.generation > own)
      throw this.replica.giveUpNow(
        invariantFailure(
          `${this.name()} would delete index entry ${entry.key} of generation ${entry.generation}, above its own ${own} (R3)`,
        ),
      );
    this.pending.push(entry);
  }

  /**
   * At the capture of a link: the deletes it carries (registered after the commits it holds). And
   * R1, R4, the entry before the upload: the state the link carries names no entry, the one it
   * named as the replica took the actor (an earlier owner's or run's), or one this owner listed. It
   * is read while no transaction is open, when the state read is the state captured.
   */
  captured(db: ReplicaDb): ReplacedEntry[] {
    if (!db.inTransaction) this.checkNamed(db);
    return this.pending.splice(0);
  }

  /** The link that carried `deletes` is in the bucket: they go out (batched across actors when the deps have a batcher). */
  landed(deletes: readonly ReplacedEntry[]): void {
    if (deletes.length === 0) return;
    const keys = deletes.map((e) => e.key);
    if (this.deps.deletes) return this.deps.deletes.add(keys);
    this.deps.store.deleteMany(keys).catch((e: unknown) => {
      this.deps.log.warn(
        { actor: this.name(), keys, err: e },
        'deleting replaced index entries failed; they stay until a delivery removes them',
      );
    });
  }

  /**
   * The owner fence (docs/alarm-index.md, R2): before removing entries as stale, an owner that has
   * uploaded nothing under its hold ends the history with a one-line change of its own, so no
   * earlier owner's late upload can still become the state. At most one extra upload per hold.
   */
  async fence(): Promise<void> {
    const r = this.replica;
    if (r.uploadedUnderHold) return;
    const db = this.db;
    if (!db || db.inTransaction) throw new ActorGivenUp(`cannot fence ${this.name()} now`);
    // On top of this head: never the value the row holds already.
    db.prepare(WRITE_FENCE).run(`${this.deps.writer.nodeId}/${r.epoch}/${r.generation}/${r.headSeq}`);
    await r.sync();
    if (!r.uploadedUnderHold) throw r.giveUpNow(new ActorGivenUp(`the owner fence of ${this.name()} uploaded nothing`));
  }

  private checkNamed(db: ReplicaDb): void {
    const named = readNamed(db);
    const known = this.named === undefined || named === '' || named === this.named || this.listedSince.has(named);
    if (!known)
      throw this.replica.giveUpNow(
        invariantFailure(`${this.name()} would upload state naming index entry ${named}, which this owner never listed (R1, R4)`),
      );
    this.named = named; // no rollback can bring back an older value than the committed one
    this.listedSince.clear();
  }

  private name(): string {
    return formatAddress(this.replica.address);
  }
}

/** alarm_indexed as stored ('' for none); every upload reads it (checkNamed). */
function readNamed(db: ReplicaDb): string {
  return (preparedOnce(db, READ_NAMED).get() as { value: string } | undefined)?.value ?? '';
}

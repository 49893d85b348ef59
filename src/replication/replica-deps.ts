/**
 * What an actor's replica (replica.ts) is given from outside: its settings, the injected store,
 * clock, randomness and logger, this node's identity and lease view, and the surface it needs of
 * the actor's open database.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { Random } from '../core/random.js';
import type { Settings } from '../core/config.js';
import type { ObjectStore } from '../store/types.js';
import type { UploadPace } from './upload-pace.js';

export type ReplicaSettings = Settings<
  | 'replicationDelayMs'
  | 'replicationDelayMaxMs'
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
  /** The worker's group-commit window (upload-pace.ts), shared by its replicas; absent: replicationDelayMs. */
  pace?: Pick<UploadPace, 'delayMs'>;
}

/**
 * What the replica needs of the actor's open database (better-sqlite3's `Database` has it): the
 * worker owns the handle; the replica turns off autocheckpoint and checkpoints when no
 * transaction is open; its index part (index-upload.ts) reads alarm_indexed and writes the owner fence.
 */
export interface ReplicaDb {
  readonly open: boolean;
  readonly inTransaction: boolean;
  pragma(source: string): unknown;
  prepare(source: string): { run(...params: unknown[]): unknown; get(...params: unknown[]): unknown };
  /** The whole database image (used for a database kept in memory). */
  serialize(): Buffer;
}

/**
 * A statement of keepwork's own, prepared once per open database (an event runs several; a prepare
 * costs about as much as the statement itself) and gone with the handle. A statement on a table
 * that a rolled-back transaction created is to be run only once the table is known to be there
 * (SQLite prepares it again itself after any schema change).
 */
const statements = new WeakMap<object, Map<string, unknown>>();

export function preparedOnce<D extends { prepare(source: string): unknown }>(db: D, sql: string): ReturnType<D['prepare']> {
  let cache = statements.get(db);
  if (!cache) statements.set(db, (cache = new Map()));
  let s = cache.get(sql);
  if (s === undefined) cache.set(sql, (s = db.prepare(sql)));
  return s as ReturnType<D['prepare']>;
}

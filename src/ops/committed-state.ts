/**
 * What the bucket's committed head says about one actor, read without touching anything: the
 * chain is restored into a temp file (replication/chain.ts `restoreChain`), opened read-only, and
 * the internal tables read (`_keep_alarm`, `_keep_meta`: workers/actor-db.ts). Used by
 * `keepwork actor inspect` and `keepwork index check`; never writes to the bucket.
 *
 *   state/<t>/<c>/<h>/<seq…> ─▶ restoreChain(tmp) ─▶ readonly SQLite ─▶ CommittedActor
 *
 * A chain that cannot be restored (a gap, a bad link) is reported as `corrupt` with the error's
 * message, so one bad actor does not stop a walk over thousands.
 */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ActorAddress } from '../core/address.js';
import { nameHex } from '../core/address.js';
import { parseIndexed, type Indexed } from '../alarms/keys.js';
import { restoreChain } from '../replication/chain.js';
import type { ObjectStore } from '../store/types.js';
import { readAlarm, readMeta } from '../workers/actor-db.js';

export interface CommittedActor {
  address: ActorAddress;
  /** empty: no chain; deleted: it ends in a tombstone; corrupt: it cannot be restored. */
  state: 'empty' | 'deleted' | 'restored' | 'corrupt';
  headSeq?: number;
  /** The hold generation of the head link's writer. */
  generation?: number;
  writer?: { nodeId: string; epoch: number; atMs: number };
  /** The committed alarm (ms), null for none. */
  alarmAt: number | null;
  /** `alarm_indexed` as stored ("" or absent: none). */
  indexedRaw: string | null;
  /** `alarm_indexed` parsed; undefined when it cannot be parsed. */
  indexed: Indexed | null | undefined;
  initialized: boolean;
  alarmFailures: number;
  ownerFence: string | null;
  error?: string;
}

const NONE = { alarmAt: null, indexedRaw: null, indexed: null, initialized: false, alarmFailures: 0, ownerFence: null } as const;

/** Restores `a`'s head into `workDir` and reads it. `seqs`: the chain's listing, when known. */
export async function readCommitted(store: ObjectStore, a: ActorAddress, workDir: string, seqs?: number[]): Promise<CommittedActor> {
  const tmp = join(workDir, `${a.tenant}-${a.className}-${nameHex(a.name).slice(0, 64)}-${process.pid}.db`);
  try {
    const r = await restoreChain(store, a, tmp, { seqs });
    if (r.state === 'empty') return { address: a, state: 'empty', ...NONE };
    const head = {
      headSeq: r.head.seq,
      generation: r.head.header.generation,
      writer: { nodeId: r.head.header.nodeId, epoch: r.head.header.epoch, atMs: r.head.header.atMs },
    };
    if (r.state === 'deleted') return { address: a, state: 'deleted', ...head, ...NONE };
    return { address: a, state: 'restored', ...head, ...readTables(tmp) };
  } catch (e) {
    return { address: a, state: 'corrupt', ...NONE, indexed: undefined, error: e instanceof Error ? e.message : String(e) };
  } finally {
    for (const suffix of ['', '-wal', '-shm']) rmSync(tmp + suffix, { force: true });
  }
}

function readTables(
  path: string,
): Pick<CommittedActor, 'alarmAt' | 'indexedRaw' | 'indexed' | 'initialized' | 'alarmFailures' | 'ownerFence'> {
  const db = new Database(path, { fileMustExist: true, readonly: true });
  try {
    const hasTables = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name IN ('_keep_alarm', '_keep_meta')").get() as {
      n: number;
    };
    if (hasTables.n < 2) return { ...NONE };
    const indexedRaw = readMeta(db, 'alarm_indexed');
    let indexed: Indexed | null | undefined;
    try {
      indexed = parseIndexed(indexedRaw);
    } catch {
      indexed = undefined;
    }
    return {
      alarmAt: readAlarm(db),
      indexedRaw,
      indexed,
      initialized: readMeta(db, 'initialized') === '1',
      alarmFailures: Number(readMeta(db, 'alarm_failures') ?? '0'),
      ownerFence: readMeta(db, 'owner_fence'),
    };
  } finally {
    db.close();
  }
}

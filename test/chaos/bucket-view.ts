/**
 * What the bucket's committed head of a chaos actor holds (test/fixtures/classes/chaos-ledger.ts):
 * its chain restored into a temp file (replication/chain.ts `restoreChain`), the log and the
 * armed alarm read back. Never writes to the bucket.
 */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseAddress } from '../../src/core/address.js';
import { listChain, restoreChain } from '../../src/replication/chain.js';
import { decodeLink, type LinkHeader } from '../../src/replication/link.js';
import { linkKey } from '../../src/replication/state-keys.js';
import type { ObjectStore } from '../../src/store/types.js';
import type { LinkWriter } from './checks.js';

export interface LogRow {
  seq: number;
  kind: 'apply' | 'arm' | 'clear' | 'fire';
  op: string;
  durable: number;
  at: number;
  due: number;
  period: number;
  fail: number;
  retries: number;
  scheduled: number;
  /** The machine's clock when the row was written (`at` is the node's, maybe skewed). */
  wall: number;
}

export interface ActorView {
  actor: string;
  state: 'empty' | 'deleted' | 'restored';
  log: LogRow[];
  /** The armed alarm's op and due time, if any. */
  current?: { op: string; due: number; period: number };
}

export async function readActor(store: ObjectStore, actor: string, workDir: string): Promise<ActorView> {
  const tmp = join(workDir, `${actor.replaceAll('/', '_')}-${process.pid}.db`);
  try {
    const r = await restoreChain(store, parseAddress(actor), tmp);
    if (r.state !== 'restored') return { actor, state: r.state, log: [] };
    const db = new Database(tmp, { readonly: true, fileMustExist: true });
    try {
      const hasLog = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'log'").get() as { n: number };
      if (hasLog.n === 0) return { actor, state: 'restored', log: [] };
      const log = db.prepare('SELECT * FROM log ORDER BY seq').all() as LogRow[];
      const current = db.prepare('SELECT op, due, period FROM current').get() as ActorView['current'];
      return { actor, state: 'restored', log, ...(current ? { current } : {}) };
    } finally {
      db.close();
    }
  } finally {
    for (const suffix of ['', '-wal', '-shm']) rmSync(tmp + suffix, { force: true });
  }
}

/** Every link's header along the actor's chain, in order. */
async function linkHeaders(store: ObjectStore, actor: string) {
  const a = parseAddress(actor);
  const out: { seq: number; header: LinkHeader }[] = [];
  for (const seq of await listChain(store, a)) {
    const obj = await store.get(linkKey(a, seq));
    if (obj) out.push({ seq, header: decodeLink(obj.body, seq).header });
  }
  return out;
}

/** Every link's writer and generation along the actor's chain, in order (checks.ts `checkChainWriters`). */
export async function chainWriters(store: ObjectStore, actor: string): Promise<LinkWriter[]> {
  return (await linkHeaders(store, actor)).map(({ seq, header: { kind, generation, nodeId, epoch } }) => ({
    seq,
    kind,
    generation,
    nodeId,
    epoch,
  }));
}

/** The actor's chain, one `seq kind by nodeId/epoch gen G at T` line per link (for a violation's report). */
export async function describeChain(store: ObjectStore, actor: string, since: number): Promise<string[]> {
  return (await linkHeaders(store, actor)).map(
    ({ seq, header: h }) =>
      `link ${seq} ${h.kind} by ${h.nodeId}/${h.epoch} generation ${h.generation} at ${((h.atMs - since) / 1_000).toFixed(1)}s`,
  );
}

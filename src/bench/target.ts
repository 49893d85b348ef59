/**
 * Where a bench writes: the bucket URL it is given, narrowed by `--prefix` to a place of its own,
 * which must be empty when the bench starts (a bench never touches a real cluster's actors,
 * node records or index), and which it empties again after every run.
 *
 *   ./b + --prefix p            → ./b/p           (a folder inside the folder bucket)
 *   s3://b/pre?endpoint=… + p   → s3://b/pre/p/?endpoint=…
 *   sqlite:FILE                 → the file itself (no prefix: name an empty or new file)
 *
 * A folder or SQLite file that does not exist is created, and removed again at the end.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BadConfig } from '../core/errors.js';
import { tenantPrefix } from '../alarms/keys.js';
import { HOLDS_PREFIX, NODES_PREFIX } from '../leases/records.js';
import { statePrefix } from '../replication/state-keys.js';
import { listAll } from '../store/keys.js';
import { localBucket, openStore } from '../store/open.js';
import type { ObjectStore } from '../store/types.js';
import { BENCH_TENANT } from './drain.js';

export interface BenchTarget {
  /** The URL every node of the bench is given. */
  url: string;
  /** A folder or SQLite file the bench created (removed at the end), or undefined. */
  created: string | undefined;
}

/** The URL of the bench's place in `bucket` (see the header); throws BadConfig for a bucket other processes cannot open. */
export function benchTarget(bucket: string, prefix: string | undefined): BenchTarget {
  const segments = prefix?.replace(/\/$/, '').split('/') ?? [];
  if (prefix !== undefined && !segments.every((s) => /^[A-Za-z0-9._-]+$/.test(s) && s !== '.' && s !== '..'))
    throw new BadConfig(
      `--prefix must be a relative key prefix of letters, digits, . _ - and / (no . or .. segment), got ${JSON.stringify(prefix)}`,
    );
  const p = prefix?.replace(/\/$/, '');
  if (bucket.startsWith('s3://')) {
    if (p === undefined) return { url: bucket, created: undefined };
    const m = /^(s3:\/\/[^/?]+)(\/[^?]*)?(\?.*)?$/.exec(bucket);
    if (!m) throw new BadConfig(`not an S3 URL: ${JSON.stringify(bucket)}`);
    const base = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
    return { url: `${m[1]}/${base ? `${base}/` : ''}${p}/${m[3] ?? ''}`, created: undefined };
  }
  const local = localBucket(bucket);
  if (local === null || bucket.startsWith('memory:'))
    throw new BadConfig(
      `--bucket ${JSON.stringify(bucket)}: a bench needs a bucket its node processes can share: a folder, sqlite:FILE or s3://…`,
    );
  if (local.kind === 'sqlite') {
    if (p !== undefined)
      throw new BadConfig('--prefix: a SQLite bucket is one file with no prefixes; give --bucket sqlite:NEW-FILE instead');
    return { url: bucket, created: existsSync(local.path) ? undefined : local.path };
  }
  const path = p === undefined ? local.path : join(local.path, p);
  return { url: path, created: existsSync(path) ? undefined : path };
}

/**
 * Refuses a place that holds anything: a live cluster's nodes, actors or index, or what an
 * earlier bench left. Throws BadConfig naming what it found and what to do.
 *
 * With running nodes (`--targets`) the place is theirs, set aside for benchmarks: it may hold
 * node records and what benches left of tenant `bench` (destroyed actors' chains), nothing else.
 */
export async function assertEmpty(store: ObjectStore, url: string, targets = false): Promise<void> {
  for await (const key of listAll(store, { pageKeys: targets ? 1000 : 1 })) {
    if (targets && benchPlaceKey(key)) continue;
    const area = key.split('/')[0];
    const what = ['nodes', 'holds', 'state', 'alarms'].includes(area!) ? `a cluster's data (${key} …)` : `other objects (${key} …)`;
    throw new BadConfig(
      targets
        ? `keepwork bench refuses ${url}: it holds ${what} besides node records and tenant ${BENCH_TENANT}. With --targets ` +
            'the nodes must run on a place set aside for benchmarks: start them with --bucket … pointing at an empty prefix, and give it here'
        : `keepwork bench refuses ${url}: it holds ${what}. A bench writes node records, actors and alarms of its own and ` +
            'never runs against real ones: give --prefix NAME for an empty place in this bucket, or another bucket',
    );
  }
}

const BENCH_AREAS = [statePrefix(BENCH_TENANT), `${HOLDS_PREFIX}${BENCH_TENANT}/`, tenantPrefix(BENCH_TENANT)];
const benchPlaceKey = (key: string) => key.startsWith(NODES_PREFIX) || BENCH_AREAS.some((p) => key.startsWith(p));

/** Deletes every object under the bench's place (it was empty when the bench started). */
export async function emptyTarget(store: ObjectStore): Promise<number> {
  let batch: string[] = [];
  let n = 0;
  for await (const key of listAll(store)) {
    batch.push(key);
    if (batch.length === 1000) {
      await store.deleteMany(batch);
      n += batch.length;
      batch = [];
    }
  }
  if (batch.length > 0) await store.deleteMany(batch);
  return n + batch.length;
}

/** Removes what `benchTarget` created (a folder or a SQLite file and its journal files). */
export function removeCreated(t: BenchTarget): void {
  if (t.created === undefined) return;
  for (const f of [t.created, `${t.created}-wal`, `${t.created}-shm`]) rmSync(f, { recursive: true, force: true });
}

export const openTarget = (t: BenchTarget): ObjectStore => openStore(t.url);

/**
 * The cluster one drain configuration runs on: its bucket (a folder, a folder behind a fixed
 * latency, a SQLite file or a fresh S3 prefix), 1+M node processes that all serve the drained
 * class (support/cluster/cluster.ts), and their disposal, which removes every trace of the run
 * unless it failed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsStore, parseFsUrl } from '../../../src/store/fs/store.js';
import { listAll } from '../../../src/store/keys.js';
import { openStore } from '../../../src/store/open.js';
import { FAULT_SCHEME, parseFaultUrl } from '../../../src/store/testing/faults.js';
import { LATENCY_SCHEME, parseLatencyUrl } from '../../../src/store/testing/latency.js';
import type { ObjectStore } from '../../../src/store/types.js';
import { Cluster } from '../../../support/cluster/cluster.js';
import { ALARMED_MODULE, CLASS } from './scenario.js';

/** Folders of `--store latency`, `slowdown` and `sqlite` buckets by URL, removed with their cluster. */
const bucketFolders = new Map<string, string>();

/** The share of writes `--store slowdown` refuses with a throttle answer. */
const SLOWDOWN_SHARE = 0.3;

/** The bucket URL of one run of `store` (undefined: the cluster's own folder). */
export function bucketFor(store: string, run: string, o: { latencyMs: number; s3Url: string | undefined }): string | undefined {
  if (store === 'fs') return undefined;
  if (store === 'latency') {
    const dir = mkdtempSync(join(tmpdir(), `kw-bench-latency-${run}-`));
    const url = `${LATENCY_SCHEME}file://${dir}?ms=${o.latencyMs}`;
    bucketFolders.set(url, dir);
    return url;
  }
  if (store === 'slowdown') {
    const dir = mkdtempSync(join(tmpdir(), `kw-bench-slowdown-${run}-`));
    const url = `${FAULT_SCHEME}file://${dir}?seed=1&slowdown=${SLOWDOWN_SHARE}`;
    bucketFolders.set(url, dir);
    return url;
  }
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `kw-bench-sqlite-${run}-`));
    const url = `sqlite:${join(dir, 'bucket.db')}`;
    bucketFolders.set(url, dir);
    return url;
  }
  if (!o.s3Url) throw new Error('--store s3 needs KEEPWORK_TEST_S3_URL (eval "$(bash scripts/s3-test-server.sh env)")');
  return o.s3Url.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/bench-drain-${process.pid}-${run}/`);
}

/** Removes the folder bucketFor made for `url`; false when it made none (a cluster folder or S3). */
export function removeBucketFolder(url: string): boolean {
  const folder = bucketFolders.get(url);
  if (folder === undefined) return false;
  rmSync(folder, { recursive: true, force: true });
  bucketFolders.delete(url);
  return true;
}

/** The store the backlog is copied with: for a folder, without fsync (throwaway data, 3–5× faster). */
export function copyStore(c: Cluster): ObjectStore {
  const folder = c.bucket.startsWith(LATENCY_SCHEME)
    ? parseLatencyUrl(c.bucket).inner
    : c.bucket.startsWith(FAULT_SCHEME)
      ? parseFaultUrl(c.bucket).inner
      : c.bucket;
  return folder.startsWith('file://') ? new FsStore(parseFsUrl(folder), { fsync: false }) : openStore(c.bucket);
}

/** A cluster on `bucket` (undefined: a folder of its own) whose every node also serves the drained class. */
export function startCluster(run: string, bucket: string | undefined): Cluster {
  const c = Cluster.create(`drain-${run}`, bucket);
  const base = c.startArgs.bind(c);
  c.startArgs = (nodeId, o) => {
    const args = base(nodeId, o);
    args.splice(args.indexOf('--class'), 0, '--class', `${CLASS}=${ALARMED_MODULE}`);
    return args;
  };
  return c;
}

/** Kills the nodes, empties an S3 prefix, removes the folder — kept (with its logs) after a failure. */
export async function disposeCluster(c: Cluster, failed: boolean): Promise<void> {
  for (const n of c.nodes) {
    if (n.running) {
      n.child.kill('SIGCONT');
      n.child.kill('SIGKILL');
      await n.exited;
    }
  }
  if (!removeBucketFolder(c.bucket) && !c.bucket.startsWith('file://')) {
    // RGW keeps objects in RAM: remove this run's prefix.
    const keys: string[] = [];
    for await (const key of listAll(c.store())) keys.push(key);
    for (let i = 0; i < keys.length; i += 1000) await c.store().deleteMany(keys.slice(i, i + 1000));
  }
  await c.store().close();
  if (failed) console.error(`cluster folder kept for inspection (node logs in logs/): ${c.root}`);
  else rmSync(c.root, { recursive: true, force: true });
}

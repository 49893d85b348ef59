/**
 * bench/fs-puts: the folder bucket's puts on the disk under TMPDIR, as new actors make them: each
 * actor's hold (a create in one shared folder) and then its first link (a create in a folder of
 * its own), at 1, 8 and 64 actors in flight. It reports puts/s, latency, this process's CPU per
 * put, the fsyncs per put (files and folders, counted through the store's fsync seam) and, on a
 * journaled ext4, the journal commits per put (`/proc/fs/jbd2`): what group commit
 * (src/store/fs/commit.ts) saves. Each level runs twice, its fsyncs on libuv's thread pool (this
 * process's UV_THREADPOOL_SIZE, Node's 4 by default) and on a node's fsync pool
 * (src/store/fs/fsync-pool.ts, `fsyncThreadsMax` 16).
 *
 *   TMPDIR=/mnt/ext4j/tmp npm run bench -- fs-puts [--quick]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SystemClock } from '../src/core/clock.js';
import { DISK_DURABILITY, type FsDurability } from '../src/store/fs/io.js';
import { FsyncPool } from '../src/store/fs/fsync-pool.js';
import { DEFAULTS } from '../src/core/config.js';
import { FsStore } from '../src/store/fs/store.js';
import { filesystemOf } from './support/filesystem.js';
import { measure, quick, round, table, writeResult } from './lib.js';

const ACTORS = quick ? 500 : 4000;
const body = new Uint8Array(600).fill(7); // about a hold's or a small link's size

const journalInfo = filesystemOf(tmpdir()).journalInfo;
const journalCommits = () => (journalInfo ? Number(readFileSync(journalInfo, 'utf8').split(' ')[0]) : NaN);

const LIBUV = `libuv's pool (${process.env.UV_THREADPOOL_SIZE ?? 4})`;
const POOL = `fsync pool (${DEFAULTS.fsyncThreadsMax})`;

async function run(inFlight: number, on: string) {
  const root = mkdtempSync(join(tmpdir(), 'kw-bench-fs-puts-'));
  const fsyncs = { files: 0, folders: 0 };
  const pool = on === POOL ? new FsyncPool({ threadsMax: DEFAULTS.fsyncThreadsMax }) : undefined;
  const disk = pool?.queue ?? DISK_DURABILITY;
  const counting: FsDurability = {
    fsyncFile: (fd) => (fsyncs.files++, disk.fsyncFile(fd)),
    fsyncFolder: (dir) => (fsyncs.folders++, disk.fsyncFolder(dir)),
  };
  const store = new FsStore(root, {}, new SystemClock(), counting);
  try {
    const commits0 = journalCommits();
    const m = await measure(ACTORS, inFlight, async (i) => {
      await store.put(`holds/c/${i}`, body, { ifNoneMatch: '*' });
      await store.put(`chains/c/a${i}/0001`, body, { ifNoneMatch: '*' });
    });
    const puts = 2 * ACTORS;
    return {
      'actors in flight': inFlight,
      'fsyncs on': on,
      'puts/s': m.opsPerSec * 2,
      'p50 ms (both puts)': m.p50Ms,
      'CPU ms per put': round(m.cpuMsPerOp / 2, 3),
      'file fsyncs per put': round(fsyncs.files / puts, 2),
      'folder fsyncs per put': round(fsyncs.folders / puts, 2),
      'journal commits per put': round((journalCommits() - commits0) / puts, 3),
    };
  } finally {
    await store.close();
    await pool?.close();
    rmSync(root, { recursive: true, force: true });
  }
}

async function main() {
  const rows = [];
  for (const inFlight of [1, 8, 64]) for (const on of [LIBUV, POOL]) rows.push(await run(inFlight, on));
  console.log(
    `\nbench/fs-puts (${ACTORS} actors, a hold and a first link each, ${body.byteLength}-byte bodies${quick ? ', --quick' : ''})\n`,
  );
  console.log(table(rows));
  if (!journalInfo) console.log('(no journal commits: TMPDIR is not on a journaled ext4)');
  console.log(`wrote ${writeResult('fs-puts', { actors: ACTORS, rows })}`);
}

await main();

/**
 * One BullMQ worker process for bench/peer-bullmq (forked with an IPC channel):
 *
 *   parent ──{go}──▶ worker.run()  each job: one INSERT into this process's own SQLite database
 *   (WAL, synchronous=NORMAL — the pragmas keepwork's actor databases use)
 *   ◀──{progress, done}── every 250 ms     parent ──{stop}──▶ ◀──{result, finishedAt[]}──
 *
 * argv: <redis url> <queue name> <concurrency> <db path>
 */
import Database from 'better-sqlite3';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const [url, queueName, concurrency, dbPath] = process.argv.slice(2) as [string, string, string, string];
const db = new Database(dbPath);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE IF NOT EXISTS fired (job TEXT, at INTEGER, scheduled INTEGER, pid INTEGER)');
const insert = db.prepare('INSERT INTO fired VALUES (?, ?, ?, ?)');
const finishedAt: number[] = [];
const connection = new Redis(url, { maxRetriesPerRequest: null });
const worker = new Worker(
  queueName,
  async (job) => {
    const at = Date.now();
    insert.run(job.id ?? '', at, job.timestamp + (job.opts.delay ?? 0), process.pid);
    finishedAt.push(at);
  },
  { connection, concurrency: Number(concurrency), autorun: false, removeOnComplete: { count: 0 }, removeOnFail: { count: 1000 } },
);
const send = (m: unknown) => process.send!(m);
const ticker = setInterval(() => send({ type: 'progress', done: finishedAt.length }), 250);
process.on('message', (m: { type: string }) => {
  if (m.type === 'go') void worker.run();
  if (m.type === 'stop') {
    clearInterval(ticker);
    // Every job is done when the parent says stop: report first, then close.
    process.send!({ type: 'result', finishedAt }, () => {
      void worker.close().finally(() => {
        db.close();
        process.exit(0);
      });
    });
  }
});
await worker.waitUntilReady();
send({ type: 'ready' });

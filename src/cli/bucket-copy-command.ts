/**
 * `keepwork bucket copy --to URL [--bucket URL]`: copies every object of a bucket into an empty one
 * of any kind — a folder bucket into the SQLite file that is now the default, a folder or SQLite
 * bucket into S3 — with every node that uses the source stopped. Keys and bodies are copied as they
 * are, so etags (the MD5 of the body in every store) match what nodes recorded: a node started on
 * the copy goes on from where it stopped.
 *
 * Refused, before anything is written: a node record in the source whose lease is live (a node
 * still running would write past the copy), a destination that holds anything. Each object is
 * created with If-None-Match: *, a few at a time; progress on stderr.
 */
import { SystemClock } from '../core/clock.js';
import { resolveOptions } from '../core/config.js';
import { BadRequest } from '../core/errors.js';
import { listAll } from '../store/keys.js';
import { openStore } from '../store/open.js';
import { clusterStatus } from './status-command.js';
import { openExistingBucket } from './open-bucket.js';
import { Progress } from './progress.js';

/** Objects read or written at once. */
const IN_FLIGHT = 16;

export async function bucketCopyCommand(o: { bucket: string; to: string }): Promise<void> {
  const config = resolveOptions();
  const clock = new SystemClock();
  const from = openExistingBucket(o.bucket, { config, clock });
  try {
    const live = (await clusterStatus(from, clock.now(), config.graceMs, config.leasePeriodMs)).filter((n) => n.status === 'live');
    if (live.length > 0)
      throw new BadRequest(
        `node ${live[0]!.nodeId} is live in ${from.description} (renewed ${(live[0]!.renewedMsAgo / 1000).toFixed(1)} s ago): ` +
          'stop every node that uses the bucket before copying it',
      );
    const to = openStore(o.to, { config, clock });
    try {
      for await (const key of listAll(to, { pageKeys: 1 }))
        throw new BadRequest(`${to.description} holds objects (${key} …): copy into an empty bucket`);
      const progress = new Progress();
      const running = new Set<Promise<void>>();
      let failed: { error: unknown } | undefined;
      let objects = 0;
      let bytes = 0;
      for await (const key of listAll(from)) {
        if (failed) break;
        const copy = (async () => {
          const obj = await from.get(key);
          if (!obj) return; // gone since it was listed (no node runs: a store's own)
          await to.put(key, obj.body, { ifNoneMatch: '*' });
          objects++;
          bytes += obj.body.byteLength;
          progress.update(`copied ${objects} objects (${(bytes / 1e6).toFixed(1)} MB)`);
        })().catch((error: unknown) => void (failed ??= { error }));
        running.add(copy);
        void copy.finally(() => running.delete(copy));
        if (running.size >= IN_FLIGHT) await Promise.race(running);
      }
      await Promise.all(running);
      progress.done();
      if (failed) throw failed.error;
      console.log(`copied ${objects} objects (${(bytes / 1e6).toFixed(1)} MB) from ${from.description} to ${to.description}`);
    } finally {
      await to.close();
    }
  } finally {
    await from.close();
  }
}

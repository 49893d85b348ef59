/**
 * `keepwork actor restore ADDRESS (--seq N | --at ISO-TIME) [--bucket URL]`: point-in-time
 * restore from the command line, with a progress line while links are applied.
 */
import { tmpdir } from 'node:os';
import { SystemClock } from '../core/clock.js';
import { parseAddress } from '../core/address.js';
import { BadRequest } from '../core/errors.js';
import { SystemRandom } from '../core/random.js';
import { restorePointInTime, type PointInTime } from '../replication/point-in-time.js';
import { openStore } from '../store/open.js';
import { resolveOptions } from '../core/config.js';

export function parseTarget(o: { seq?: number; at?: string }): PointInTime {
  if ((o.seq === undefined) === (o.at === undefined)) throw new BadRequest('give exactly one of --seq N or --at ISO-TIME');
  if (o.seq !== undefined) {
    if (!Number.isSafeInteger(o.seq) || o.seq < 1) throw new BadRequest(`--seq must be a positive integer, got ${o.seq}`);
    return { seq: o.seq };
  }
  const atMs = Date.parse(o.at!);
  if (Number.isNaN(atMs)) throw new BadRequest(`--at must be an ISO time such as 2026-11-29T10:00:00Z, got ${JSON.stringify(o.at)}`);
  return { atMs };
}

export async function restoreCommand(address: string, o: { bucket: string; seq?: number; at?: string }): Promise<void> {
  const a = parseAddress(address);
  const target = parseTarget(o);
  const config = resolveOptions();
  const clock = new SystemClock();
  const random = new SystemRandom();
  const store = openStore(o.bucket, { config, clock, random });
  try {
    const result = await restorePointInTime(store, a, target, {
      clock,
      random,
      attemptsMax: config.storeAttemptsMax,
      retryBaseMs: config.storeRetryBaseMs,
      writer: { nodeId: 'cli', epoch: 0, generation: 0 },
      workDir: tmpdir(),
      onProgress: (done, total) => process.stderr.write(`\rapplying link ${done}/${total}`),
    });
    process.stderr.write('\n');
    console.log(`restored ${address} as of link ${result.fromSeq} (${result.bytes} bytes) as its new head, link ${result.newSeq}`);
  } finally {
    await store.close();
  }
}

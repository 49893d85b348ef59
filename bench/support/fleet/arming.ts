/**
 * One tenant arming alarms at a steady rate, against the modelled bucket alone (s3-model.ts): each
 * arming is one PUT of a new index entry, due `minDelayMs`–`maxDelayMs` later, of a random actor,
 * in the layout of S shards. How many PUTs per second before the bucket answers 503, from the
 * partitions the run starts with (and with the splits the model makes as it goes).
 */
import { entryKey } from '../../../src/alarms/keys.js';
import { parseAddress } from '../../../src/core/address.js';
import { SeededRandom } from '../../../src/core/random.js';
import { FLEET_CLASS, FLEET_TENANT, actorName, shardOfId } from './index-store.js';
import { S3Model, type S3Inputs } from './s3-model.js';
import { T0_MS } from './run.js';

export interface ArmingResult {
  S: number;
  ratePerS: number;
  seconds: number;
  refused: number;
  /** Seconds with any 503. */
  secondsRefused: number;
  /** The last second with a 503 (−1: none). */
  lastRefusedS: number;
  splits: number;
}

const ACTORS = 1 << 20;
const MIN_DELAY_MS = 1_000;
const MAX_DELAY_MS = 600_000;

export function runArming(shards: number, ratePerS: number, seconds: number, s3: S3Inputs, seed: number): ArmingResult {
  const random = new SeededRandom(seed);
  const model = new S3Model(s3, random.fork());
  const template = parseAddress({ tenant: FLEET_TENANT, className: FLEET_CLASS, name: actorName(0) });
  let refusedBefore = 0;
  let secondsRefused = 0;
  let lastRefusedS = -1;
  for (let s = 0; s < seconds; s++) {
    for (let i = 0; i < ratePerS; i++) {
      const atMs = T0_MS + s * 1000 + (i * 1000) / ratePerS;
      const id = random.int(ACTORS);
      const dueMs = Math.floor(atMs + MIN_DELAY_MS + random.float() * (MAX_DELAY_MS - MIN_DELAY_MS));
      const address = { ...template, name: actorName(id), key: `${FLEET_TENANT}/${FLEET_CLASS}/${actorName(id)}` };
      const key = entryKey({ address, dueMs, tag: { generation: 1, nonce: 'a' }, shard: shardOfId(id, shards) });
      model.admit('PUT', [key], atMs);
    }
    const refused = model.counts.refused.PUT;
    if (refused > refusedBefore) (secondsRefused++, (lastRefusedS = s));
    refusedBefore = refused;
  }
  return { S: shards, ratePerS, seconds, refused: model.counts.refused.PUT, secondsRefused, lastRefusedS, splits: model.counts.splits };
}

/** Arming delays drawn: the model's input, printed with its results. */
export const ARMING_DELAYS = { minDelayMs: MIN_DELAY_MS, maxDelayMs: MAX_DELAY_MS, actors: ACTORS };

/**
 * Every tunable of keepwork, in three stages:
 *
 *   KeepworkOptions (all optional)  →  DEFAULTS (one place)  →  resolveOptions(): ResolvedConfig
 *
 * Names end in their unit; an on/off tunable (a `Switch`) is a boolean. `resolveOptions` validates
 * once and throws `BadConfig` with a message that names the option and the rule; unknown option
 * names are refused too (a typo must not be silently ignored), and so is a switch given as a
 * number (0 and 1 are the command line's spelling, src/cli/tunables-help.ts). docs/tuning.md and
 * docs/alarm-index.md explain the defaults.
 */
import { BadConfig } from './errors.js';

/** The most shards the alarm index's keys can name (three hex digits, src/alarms/keys.ts). */
export const SHARDS_MAX = 4096;

export const DEFAULTS = Object.freeze({
  /** How long a node lease lasts after its last successful renewal was sent. */
  leasePeriodMs: 10_000,
  /** How long after expiry a lease is still treated as possibly live. */
  graceMs: 5_000,
  /** Bound on clock skew the lease validity subtracts. */
  skewBoundMs: 1_000,
  /** Every how often each node sweeps each tenant's alarm index. */
  alarmSweepMs: 10_000,
  /** Shards of the alarm index new entries are written in (a power of two; 1: the unsharded layout). */
  indexShards: 1,
  /** Index entries read per sweep, at most. */
  sweepPageEntries: 2048,
  /** Alarms delivered per sweep, at most. */
  deliveriesPerSweep: 256,
  /** Of those, kept for entries that are anyone's (an eighth of deliveriesPerSweep unless set). */
  anyonesDeliveriesPerSweep: 32,
  /** An entry overdue this many margins (lease + grace) is anyone's. */
  anyonesAfterMargins: 3,
  /** Least time between two walks of another node's shard folder (a sharded index's slow walk),
   *  start to start: one folder per walk, so a node's round of F other folders takes F + 1 times this
   *  (alarmSweepMs unless set). */
  otherShardWalkMs: 10_000,
  /** First retry delay of a failed alarm handler; doubles per failure. */
  retryBaseMs: 1_000,
  /** Longest retry delay. */
  retryMaxMs: 300_000,
  /** An actor idle this long is flushed, closed and released. */
  idleTimeoutMs: 60_000,
  /** Group-commit window of the replicator on an idle worker thread: a plain call's commit waits
   *  this long for others of its actor to join its upload. */
  replicationDelayMs: 20,
  /** The group-commit window on a busy worker thread (upload-pace.ts): it grows from
   *  replicationDelayMs to this as the worker's event loop gets busy. */
  replicationDelayMaxMs: 1_000,
  /** Attempts of one store request before it is reported as failed. */
  storeAttemptsMax: 4,
  /** First delay between store attempts (doubles, with jitter). */
  storeRetryBaseMs: 50,
  /** Time limit of one store request. */
  storeRequestTimeoutMs: 10_000,
  /** Puts a folder bucket makes durable together (one group commit: their fsyncs at once, then
   *  one fsync per folder), at most. */
  storePutBatchObjectsMax: 32,
  /** Bytes of bodies in one group commit of a folder bucket, at most (a larger body commits alone). */
  storePutBatchBytesMax: 16_777_216,
  /** Threads of the node's own fsync pool (store/fs/fsync-pool.ts), at most: the folder bucket's
   *  and new actor files' fsyncs, off libuv's pool; started as fsyncs want them, ~8 MB each,
   *  leaving when idle. 0: no pool, those fsyncs wait in libuv's pool. */
  fsyncThreadsMax: 16,
  /** Keep-alive sockets of the S3 client (sized for the sweep's concurrency). */
  storeSocketsMax: 64,
  /** Requests of one class (index writes, chain uploads, reads, lists, …) in flight at once, at
   *  most: the start and ceiling of the class's window, which halves when the bucket throttles. */
  storeWindowMax: 256,
  /** Requests of one class waiting for its window, at most; more are refused with STORE_UNAVAILABLE. */
  storeWaitingMax: 10_000,
  /** Sends of one request the bucket throttles (503 SlowDown, 429) before it is reported as failed. */
  storeThrottleAttemptsMax: 10,
  /** Longest wait after a throttle answer (the doubling backoff's cap; a longer Retry-After is cut to it). */
  storeThrottleDelayMaxMs: 5_000,
  /** On: the S3 store sends its requests through the AWS SDK's S3Client (loaded then, megabytes per
   *  thread); off: through keepwork's lean client (Signature V4 on node:http, a fraction of the CPU). */
  s3SdkClient: false,
  /** Time limit of one handler run; past it the event fails (and rolls back). */
  handlerTimeoutMs: 30_000,
  /** Events waiting per actor, at most; more are refused with OVERLOADED. */
  actorQueueMax: 256,
  /** Waiting events of one actor sent to its worker as one task, at most (each still its own transaction). */
  eventsPerTaskMax: 64,
  /** Worker threads running actor events (0: one per core, at most 4). */
  workerThreads: 0,
  /** Events one worker runs at once (for different actors). */
  workerConcurrency: 64,
  /** Each worker thread's young generation (V8's nursery), MB: small, so short-lived garbage is
   *  collected before it grows the heap (a 100,000-alarm drain's peak RSS; docs/tuning.md). */
  workerYoungGenerationMb: 12,
  /** Open actor databases kept per worker (LRU). */
  dbCacheMax: 2048,
  /** Largest HTTP request body. */
  httpBodyMaxBytes: 1_048_576,
  /** Time limit for a request body to arrive, from its headers (a trickled body is answered 408). */
  httpBodyTimeoutMs: 30_000,
  /** Time limit for a request's headers to arrive (node:http's headersTimeout). */
  httpHeadersTimeoutMs: 10_000,
  /** Open HTTP connections the node accepts at once; more are closed at once (node:http's maxConnections). */
  httpConnectionsMax: 1_024,
  /** Largest result a call answers over HTTP; a larger one is 500 RESULT_TOO_LARGE. */
  httpResultMaxBytes: 8_388_608,
  /** Alarms the in-memory timer holds, at most. */
  timerEntriesMax: 1_000_000,
  /** A snapshot link at least every this many links (also when the deltas outweigh a snapshot). */
  snapshotEveryLinks: 64,
  /** Checkpoint an actor's WAL into its database every this many links... */
  checkpointEveryLinks: 32,
  /** ...or once the WAL grows past this size. */
  checkpointWalBytes: 4_194_304,
  /** Links older than the second-newest snapshot are deleted once they are this old. */
  linkRetentionMs: 86_400_000,
  /** Time limit of a call forwarded to the node holding the actor. */
  forwardTimeoutMs: 10_000,
  /** Forwarding hops a call may take before it is refused (a routing loop). */
  forwardHopsMax: 2,
  /** On: adaptive sweep cadence (sweep again at once after a full sweep, and at the next entry's
   *  due time + margin); off: the design's fixed cadence of alarmSweepMs. */
  sweepAdaptive: true,
  /** Shortest pause between two sweeps of one tenant in adaptive mode. */
  sweepMinGapMs: 200,
  /** Deliveries the node runs at once (the bounded queue behind the timer), at least... */
  deliveryConcurrency: 32,
  /** ...and at most: more run while the bucket's round trips, not the node's threads, are what
   *  deliveries wait for (main/delivery-limit.ts; on S3, not on a folder). */
  deliveryConcurrencyMax: 256,
  /** Actors a node keeps (held, with their state on the main thread) past an event, at most:
   *  beyond it the least recently used are closed and released before idleTimeoutMs. */
  heldActorsMax: 10_000,
  /** On: an actor with no local file is taken into memory to run an alarm (restored from the
   *  bucket, its change uploaded from memory, nothing written to the local disk); off: restored
   *  into a local file, as for calls. */
  alarmsInMemory: true,
  /** On: an event that creates a new actor (nothing in the bucket, no local file) runs it in memory
   *  and replies once its first link is in the bucket, writing nothing to the local disk; the
   *  actor's next call moves it to a local file (its image, no bucket read). Off: the new actor
   *  gets its file at once. */
  newActorsInMemory: false,
  /** New actors' database files each worker keeps made and fsynced ahead of need (workers/spare-files.ts);
   *  a new actor's file is one of them, renamed into place. 0: each is written and fsynced at its first call. */
  spareActorFiles: 32,
  /** New actors (holds created) one tenant may create per second on this node, at most (up to a
   *  second's worth at once); past it a new actor's first event is refused with OVERLOADED (HTTP
   *  503, Retry-After) and nothing is written. Actors that exist are never counted. */
  newActorsPerTenantPerSecond: 10_000,
  /** Idempotency keys of durable calls an actor remembers, at most (the oldest are pruned first). */
  idempotencyKeysMax: 1_000,
  /** An idempotency key is remembered this long after its call (then the key may run again). */
  idempotencyRetentionMs: 86_400_000,
});

type Defaults = typeof DEFAULTS;
/** A tunable's name. */
export type Tunable = keyof Defaults;
/** The on/off tunables: those whose default is a boolean. */
export type Switch = { [K in Tunable]: Defaults[K] extends boolean ? K : never }[Tunable];
/** The tunables that are integers: a duration, a size or a count, each within its `RULES` range. */
export type IntegerTunable = Exclude<Tunable, Switch>;
/** What a tunable holds: a boolean for a switch, else an integer. */
type ValueOf<K extends Tunable> = K extends Switch ? boolean : number;

export type ResolvedConfig = {
  readonly [K in Tunable]: ValueOf<K>;
} & {
  /** lease + grace: how overdue an entry must be before a sweep reads it. */
  readonly marginMs: number;
};

/** The few resolved values one component uses (each component names its own, e.g. `LeaseSettings`). */
export type Settings<K extends keyof ResolvedConfig> = Pick<ResolvedConfig, K>;

export type KeepworkOptions = { [K in Tunable]?: ValueOf<K> };

export type Rule = { min: number; max?: number };

/** Whether `name` is an on/off tunable (false for any other name, known or not). */
export function isSwitch(name: string): name is Switch {
  return Object.hasOwn(DEFAULTS, name) && typeof DEFAULTS[name as Tunable] === 'boolean';
}

/** The range each integer tunable must fall in (also shown by `keepwork start --help`). */
export const RULES: Readonly<Record<IntegerTunable, Rule>> = {
  leasePeriodMs: { min: 1 },
  graceMs: { min: 0 },
  skewBoundMs: { min: 0 },
  alarmSweepMs: { min: 1 },
  indexShards: { min: 1, max: SHARDS_MAX },
  sweepPageEntries: { min: 1, max: 100_000 },
  deliveriesPerSweep: { min: 1, max: 100_000 },
  anyonesDeliveriesPerSweep: { min: 0 },
  anyonesAfterMargins: { min: 1 },
  otherShardWalkMs: { min: 1 },
  retryBaseMs: { min: 1 },
  retryMaxMs: { min: 1 },
  idleTimeoutMs: { min: 1 },
  replicationDelayMs: { min: 0 },
  replicationDelayMaxMs: { min: 0 },
  storeAttemptsMax: { min: 1, max: 100 },
  storeRetryBaseMs: { min: 0 },
  storeRequestTimeoutMs: { min: 1 },
  storePutBatchObjectsMax: { min: 1, max: 10_000 },
  storePutBatchBytesMax: { min: 1, max: 1_073_741_824 },
  storeSocketsMax: { min: 1, max: 10_000 },
  storeWindowMax: { min: 1, max: 10_000 },
  storeWaitingMax: { min: 1, max: 1_000_000 },
  storeThrottleAttemptsMax: { min: 1, max: 100 },
  storeThrottleDelayMaxMs: { min: 1, max: 600_000 },
  handlerTimeoutMs: { min: 1 },
  actorQueueMax: { min: 1, max: 1_000_000 },
  eventsPerTaskMax: { min: 1, max: 10_000 },
  workerThreads: { min: 0, max: 256 },
  workerConcurrency: { min: 1, max: 1024 },
  workerYoungGenerationMb: { min: 1, max: 1024 },
  dbCacheMax: { min: 1, max: 100_000 },
  httpBodyMaxBytes: { min: 1, max: 1_073_741_824 },
  httpBodyTimeoutMs: { min: 1 },
  httpHeadersTimeoutMs: { min: 1 },
  httpConnectionsMax: { min: 1, max: 1_000_000 },
  httpResultMaxBytes: { min: 1, max: 1_073_741_824 },
  timerEntriesMax: { min: 1 },
  snapshotEveryLinks: { min: 1 },
  checkpointEveryLinks: { min: 1 },
  checkpointWalBytes: { min: 1 },
  linkRetentionMs: { min: 0 },
  forwardTimeoutMs: { min: 1 },
  forwardHopsMax: { min: 0, max: 10 },
  sweepMinGapMs: { min: 1 },
  deliveryConcurrency: { min: 1, max: 10_000 },
  deliveryConcurrencyMax: { min: 1, max: 10_000 },
  spareActorFiles: { min: 0, max: 10_000 },
  fsyncThreadsMax: { min: 0, max: 256 },
  newActorsPerTenantPerSecond: { min: 1, max: 1_000_000 },
  heldActorsMax: { min: 1, max: 10_000_000 },
  idempotencyKeysMax: { min: 1, max: 1_000_000 },
  idempotencyRetentionMs: { min: 1 },
};

export function resolveOptions(options: KeepworkOptions = {}): ResolvedConfig {
  for (const key of Object.keys(options)) {
    if (!(key in DEFAULTS)) throw new BadConfig(`unknown option ${key}; known options: ${Object.keys(DEFAULTS).join(', ')}`);
  }
  const merged: { -readonly [K in Tunable]: ValueOf<K> } = { ...DEFAULTS };
  for (const key of Object.keys(DEFAULTS) as Tunable[]) {
    const value: unknown = options[key];
    if (value === undefined) continue;
    if (isSwitch(key)) {
      merged[key] = switchValue(key, value);
      continue;
    }
    const rule = RULES[key];
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
      throw new BadConfig(`${key} must be an integer, got ${JSON.stringify(value)}`);
    }
    if (value < rule.min) throw new BadConfig(`${key} must be at least ${rule.min}, got ${value}`);
    if (rule.max !== undefined && value > rule.max) throw new BadConfig(`${key} must be at most ${rule.max}, got ${value}`);
    merged[key] = value;
  }
  if (options.anyonesDeliveriesPerSweep === undefined) {
    merged.anyonesDeliveriesPerSweep = Math.floor(merged.deliveriesPerSweep / 8);
  }
  if (options.otherShardWalkMs === undefined) merged.otherShardWalkMs = merged.alarmSweepMs;
  if (merged.retryBaseMs > merged.retryMaxMs) {
    throw new BadConfig(`retryBaseMs (${merged.retryBaseMs}) must not exceed retryMaxMs (${merged.retryMaxMs})`);
  }
  if (merged.anyonesDeliveriesPerSweep > merged.deliveriesPerSweep) {
    throw new BadConfig(
      `anyonesDeliveriesPerSweep (${merged.anyonesDeliveriesPerSweep}) must not exceed deliveriesPerSweep (${merged.deliveriesPerSweep})`,
    );
  }
  if (options.deliveryConcurrencyMax === undefined) {
    merged.deliveryConcurrencyMax = Math.max(merged.deliveryConcurrencyMax, merged.deliveryConcurrency);
  } else if (merged.deliveryConcurrencyMax < merged.deliveryConcurrency) {
    throw new BadConfig(
      `deliveryConcurrencyMax (${merged.deliveryConcurrencyMax}) must not be less than deliveryConcurrency (${merged.deliveryConcurrency})`,
    );
  }
  if ((merged.indexShards & (merged.indexShards - 1)) !== 0) {
    throw new BadConfig(`indexShards must be a power of two (1, 2, 4 … ${SHARDS_MAX}), got ${merged.indexShards}`);
  }
  if (merged.skewBoundMs >= merged.leasePeriodMs) {
    throw new BadConfig(`skewBoundMs (${merged.skewBoundMs}) must be less than leasePeriodMs (${merged.leasePeriodMs})`);
  }
  return Object.freeze({ ...merged, marginMs: merged.leasePeriodMs + merged.graceMs });
}

/** A switch's value from the library: a boolean; 0 and 1 are refused with the boolean to write instead. */
function switchValue(key: Switch, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  const instead = value === 0 || value === 1 ? ` (write ${value === 1}: 0 and 1 are taken on the command line only)` : '';
  throw new BadConfig(`${key} must be true or false, got ${JSON.stringify(value)}${instead}`);
}

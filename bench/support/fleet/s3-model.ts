/**
 * The fleet model's S3: what a request costs in time and dollars, and when the bucket answers 503
 * SlowDown. No bytes are stored here (index-store.ts holds the index); this is the bucket's
 * behaviour, shared by every node of a run.
 *
 * Fault model (the only one): a request over its partition's rate is refused with 503 SlowDown,
 * after its round trip; the node sends it again through its governor (node-model.ts), as
 * keepwork's store does. No request is lost, slow beyond its latency draw, or reordered otherwise.
 *
 *   latency   per verb, lognormal through the given p50 and p99 (or one fixed value)
 *   limits    per partition, per virtual second: `writesPerSecond` PUT/DeleteObjects (each key of a
 *             DeleteObjects counts, in its own partition), `readsPerSecond` GET/LIST (AWS: 3,500 and 5,500 per
 *             partitioned prefix); a request past either is refused (503) but counts as demand
 *   partitions  key ranges [bound_i, bound_i+1); the run starts with the bounds it is given
 *             (the bucket's prefixes as its steady traffic left them). A partition whose demand
 *             was over a limit in each of `splitAfterS` seconds in a row splits at the median of
 *             the keys it was asked for in its last second; each half has the full limits
 *   prices    per 1,000 requests by verb, the verbs of the one S3 price table (src/bench/s3-prices.ts:
 *             a DeleteObjects is a POST, not a free DELETE); refused requests are not billed
 */
import type { Random } from '../../../src/core/random.js';
import { S3_STANDARD_DOLLARS_PER_1000, type S3Verb } from '../s3-prices.js';

/** The requests the model sends, named as the price table names them (its deletes are batched: DeleteObjects). */
export type Verb = Extract<S3Verb, 'GET' | 'PUT' | 'LIST' | 'DeleteObjects'>;
export const VERBS: readonly Verb[] = ['GET', 'PUT', 'LIST', 'DeleteObjects'];
const WRITES = new Set<Verb>(['PUT', 'DeleteObjects']);

export interface LatencyQuantiles {
  p50Ms: number;
  p99Ms: number;
}

export interface S3Inputs {
  /** Per verb (lognormal through p50 and p99), or every request this long. */
  latency: Record<Verb, LatencyQuantiles> | { fixedMs: number };
  writesPerSecond: number;
  readsPerSecond: number;
  splitAfterS: number;
  /** Lower bounds of the partitions the run starts with ('' is always one). */
  partitionBounds: readonly string[];
  /** Dollars per 1,000 requests. */
  pricePer1000: Record<Verb, number>;
}

/** The model's four verbs at S3 Standard list prices, each looked up by its own name in the one table (src/bench/s3-prices.ts). */
export const S3_STANDARD_PRICES: Record<Verb, number> = {
  PUT: S3_STANDARD_DOLLARS_PER_1000.PUT,
  LIST: S3_STANDARD_DOLLARS_PER_1000.LIST,
  GET: S3_STANDARD_DOLLARS_PER_1000.GET,
  DeleteObjects: S3_STANDARD_DOLLARS_PER_1000.DeleteObjects,
};

/**
 * AWS's published first-byte latencies for small objects are tens of milliseconds; these are the
 * model's (p50 near AWS's typical 20–60 ms for GET/PUT, LIST pages 30–100 ms), with a long tail.
 */
export const AWS_LATENCY: Record<Verb, LatencyQuantiles> = {
  GET: { p50Ms: 25, p99Ms: 90 },
  PUT: { p50Ms: 35, p99Ms: 120 },
  LIST: { p50Ms: 50, p99Ms: 150 },
  DeleteObjects: { p50Ms: 30, p99Ms: 100 },
};

/** Which part of the bucket a key is in, for the per-area peaks. */
export type Area = 'index' | 'actors' | 'nodes';

export function areaOf(key: string): Area {
  return key.startsWith('alarms/') ? 'index' : key.startsWith('nodes/') ? 'nodes' : 'actors';
}

interface Partition {
  bound: string;
  second: number;
  reads: number;
  writes: number;
  /** Demand over a limit in this many seconds in a row, up to the current one (not counted yet). */
  hotSeconds: number;
  sample: string[];
  seen: number;
}

export interface S3Counts {
  requests: Record<Verb, number>;
  refused: Record<Verb, number>;
  /** Keys deleted through DeleteObjects (each counts against the write limit). */
  batchedKeys: number;
  /** Highest demand one partition saw in one second, by area: reads, writes. */
  peak: Record<Area, { reads: number; writes: number }>;
  splits: number;
}

export class S3Model {
  private readonly parts: Partition[];
  readonly counts: S3Counts = {
    requests: { GET: 0, PUT: 0, LIST: 0, DeleteObjects: 0 },
    refused: { GET: 0, PUT: 0, LIST: 0, DeleteObjects: 0 },
    batchedKeys: 0,
    peak: { index: { reads: 0, writes: 0 }, actors: { reads: 0, writes: 0 }, nodes: { reads: 0, writes: 0 } },
    splits: 0,
  };

  constructor(
    readonly inputs: S3Inputs,
    private readonly random: Random,
  ) {
    const bounds = [...new Set(['', ...inputs.partitionBounds])].sort();
    this.parts = bounds.map((bound) => ({ bound, second: -1, reads: 0, writes: 0, hotSeconds: 0, sample: [], seen: 0 }));
  }

  get partitions(): number {
    return this.parts.length;
  }

  /** One round trip of `verb`, ms. */
  latencyMs(verb: Verb): number {
    const l = this.inputs.latency;
    if ('fixedMs' in l) return l.fixedMs;
    const { p50Ms, p99Ms } = l[verb];
    const sigma = Math.log(p99Ms / p50Ms) / 2.326;
    return p50Ms * Math.exp(sigma * normal(this.random));
  }

  /**
   * A request of `verb` on `keys[0]` arriving at `atMs` (a DeleteObjects: every key of `keys`
   * counts against its own partition): admitted, or refused (503) when any key's partition is
   * over its limit. Counted either way.
   */
  admit(verb: Verb, keys: readonly string[], atMs: number): boolean {
    const second = Math.floor(atMs / 1000);
    const write = WRITES.has(verb);
    const limit = write ? this.inputs.writesPerSecond : this.inputs.readsPerSecond;
    let over = false;
    for (const key of keys) {
      const p = this.partitionOf(key);
      if (second > p.second) this.closeSecond(p, second);
      const count = write ? ++p.writes : ++p.reads;
      if (count > limit) over = true;
      if (++p.seen <= 64) p.sample.push(key);
      else if (this.random.int(p.seen) < 64) p.sample[this.random.int(64)] = key;
      const peak = this.counts.peak[areaOf(p.bound || key)];
      if (write) peak.writes = Math.max(peak.writes, count);
      else peak.reads = Math.max(peak.reads, count);
    }
    if (over) {
      this.counts.refused[verb]++;
      return false;
    }
    this.counts.requests[verb]++;
    if (keys.length > 1) this.counts.batchedKeys += keys.length;
    return true;
  }

  private partitionOf(key: string): Partition {
    const ps = this.parts;
    let lo = 0;
    let hi = ps.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ps[mid]!.bound <= key) lo = mid;
      else hi = mid - 1;
    }
    return ps[lo]!;
  }

  /** The partition's counted second ends: was it hot, and does it split now. */
  private closeSecond(p: Partition, second: number): void {
    const hot = p.reads > this.inputs.readsPerSecond || p.writes > this.inputs.writesPerSecond;
    p.hotSeconds = hot && second === p.second + 1 ? p.hotSeconds + 1 : 0;
    if (p.hotSeconds >= this.inputs.splitAfterS) this.split(p);
    p.second = second;
    p.reads = p.writes = p.seen = 0;
    p.sample = [];
  }

  private split(p: Partition): void {
    const keys = [...p.sample].sort();
    const median = keys[keys.length >> 1];
    p.hotSeconds = 0;
    if (median === undefined || median <= p.bound || this.parts.some((q) => q.bound === median)) return;
    const i = this.parts.indexOf(p);
    this.parts.splice(i + 1, 0, { bound: median, second: p.second, reads: 0, writes: 0, hotSeconds: 0, sample: [], seen: 0 });
    this.counts.splits++;
  }

  /** Dollars by verb for the billed requests. */
  dollars(): Record<Verb, number> {
    const out = { GET: 0, PUT: 0, LIST: 0, DeleteObjects: 0 };
    for (const v of VERBS) out[v] = (this.counts.requests[v] / 1000) * this.inputs.pricePer1000[v];
    return out;
  }
}

/** A standard normal draw (Box–Muller). */
function normal(random: Random): number {
  const u = Math.max(1e-12, random.float());
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random.float());
}

/**
 * What bench/drain records per configuration: one DrainRow per (store, mode, K, M) run, as written
 * to bench/results/<out>.json and read back by `--append` and `--reprice`. Its own module so that
 * the run (bench/drain.ts and its parts) and the tables (report.ts) both import it, neither the other.
 */
import type { PeerResult } from '../../peer-bullmq.js';
import type { Rates } from '../ceiling.js';
import type { S3Verb } from '../s3-prices.js';

export interface DrainRow {
  store: string;
  mode: string;
  K: number;
  M: number;
  copyEndedBeforeTMs: number;
  drainMs: number;
  firstFiredMs: number;
  lastFiredMs: number;
  perNodePerSecBurst: number;
  perNodePerSecSinceReadable: number;
  lateness: { p50: number; p99: number; max: number; source: 'read back' | 'curve' };
  sinceReadable: { p50: number; p99: number };
  duplicates?: number;
  deliveries: Record<string, number>;
  requestsPerDelivery: { main: Record<string, number>; worker: Record<string, number>; total: number };
  /** Throttle answers (503 SlowDown and the like) per delivery, sent again by the store; and requests given up still throttled. */
  throttledPerDelivery?: number;
  throttleExhausted?: number;
  /** Per survivor, index entries its sweeps read per alarm it ran (absent from results written before it was measured). */
  entriesReadPerDelivery?: number[];
  /** Per survivor, its sweeps during the drain and the entries each read and offered on average. */
  sweepsPerNode?: { sweeps: number; readPerSweep: number; offeredPerSweep: number }[];
  /** Both threads' requests per delivered alarm by S3 request (src/bench/s3-prices.ts). */
  requestsByVerb?: Partial<Record<S3Verb, number>>;
  /** Those requests at S3 Standard list prices, per million delivered alarms. */
  dollarsPerMillion?: number;
  storeRates: Rates;
  /** Deliveries a survivor ran at once on average during the drain: the ceiling's concurrency (older rows: absent, 32 or the mode's). */
  inFlight?: number;
  ceilingPerSec: number;
  ratioToCeiling: number;
  bullmqPerWorkerPerSec?: number;
  ratioToBullmq?: number;
  cpuSecPerNode: number[];
  cpuPercentPerNode: number[];
  /** The survivors' main threads alone (absent from results written before it was measured). */
  mainThreadCpuSecPerNode?: number[];
  /** CPU ms per alarm over the drain's second half (secondHalfCpu in sampling.ts). */
  cpuMsPerAlarmSecondHalf?: number;
  peakRssMbPerNode: number[];
  /** [seconds since T, CPU s of the survivors since the watch began] */
  cpuCurve?: [number, number][];
  /** [seconds since T, alarms ran] */
  curve: [number, number][];
}

/** What bench/results/<out>.json holds besides its envelope: the keepwork rows and the BullMQ peer's. */
export interface DrainResults {
  rows: DrainRow[];
  peers: PeerResult[];
}

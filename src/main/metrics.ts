/**
 * The node's Prometheus metrics (prom-client, one registry per node), served at GET /metrics.
 * Every series is documented in docs/operations.md.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RequestCounts } from '../store/request-counts.js';
import type { ThrottleStats } from '../store/throttle/stats.js';
import { StatusFeed } from './status-feed.js';
import { WorkerShares } from './worker-shares.js';
import { RULES } from '../core/config.js';
import type { SweepResult } from '../alarms/sweep.js';

/** keepwork_hold_takes_total's `how` label for each count of the hold table (holds.ts `takes`). */
const HOLD_TAKE_LABELS = {
  read: 'read',
  expected: 'expected',
  expectedMissed: 'expected_missed',
  created: 'created',
  createdMissed: 'created_missed',
} as const;

export class NodeMetrics {
  readonly registry = new Registry();
  /** Recent deliveries and samples over time, for the status page (not Prometheus series). */
  readonly feed = new StatusFeed();
  readonly deliveries = new Counter({
    name: 'keepwork_alarm_deliveries_total',
    help: 'Alarm deliveries started, by source (own timer or sweep offer) and outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly staleRemoved = this.counter('keepwork_index_stale_removed_total', 'Stale index entries removed at delivery');
  readonly tardiness = new Histogram({
    name: 'keepwork_alarm_tardiness_seconds',
    help: 'How late an alarm delivery started after its due time',
    buckets: [0.05, 0.25, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300],
    registers: [this.registry],
  });
  readonly sweepDuration = new Histogram({
    name: 'keepwork_sweep_duration_seconds',
    help: 'Duration of one sweep of one tenant',
    labelNames: ['tenant'] as const,
    buckets: [0.005, 0.02, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly sweepRead = new Counter({
    name: 'keepwork_sweep_entries_read_total',
    help: 'Index entries read by sweeps',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly sweepOffered = new Counter({
    name: 'keepwork_sweep_entries_offered_total',
    help: 'Entries a sweep offered to the timer and it took',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly sweepOfferedAnyones = new Counter({
    name: 'keepwork_sweep_anyones_offered_total',
    help: 'Of the entries offered, those of another node’s shard (anyone’s: overdue three margins)',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly indexLag = new Gauge({
    name: 'keepwork_index_lag_seconds',
    help: 'Age of the oldest overdue entry the last sweep read (0 when none)',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly mainRequests: RequestCounts;
  readonly workerRequests: RequestCounts;
  readonly storeRequests = new Counter({
    name: 'keepwork_store_requests_total',
    help: 'Bucket requests by operation, key area (alarms, state, holds, nodes, other) and thread (main, worker)',
    labelNames: ['op', 'area', 'thread'] as const,
    registers: [this.registry],
    collect: () => this.collectRequests(),
  });
  readonly mainThrottle: ThrottleStats;
  readonly workerThrottle: ThrottleStats;
  readonly storeThrottled = new Counter({
    name: 'keepwork_store_throttled_total',
    help: 'Throttle answers from the bucket (503 SlowDown, 429, …), each one a request sent again, by request class and thread',
    labelNames: ['class', 'thread'] as const,
    registers: [this.registry],
    collect: () => this.collectThrottle(),
  });
  readonly storeThrottleExhausted = new Counter({
    name: 'keepwork_store_throttle_exhausted_total',
    help: 'Requests still throttled after storeThrottleAttemptsMax sends, reported as STORE_UNAVAILABLE, by request class and thread',
    labelNames: ['class', 'thread'] as const,
    registers: [this.registry],
    collect: () => this.collectThrottle(),
  });
  readonly storeWindow = new Gauge({
    name: 'keepwork_store_window',
    help: 'Requests of a class the node may have in flight now (its AIMD window; summed over the worker threads), by request class and thread',
    labelNames: ['class', 'thread'] as const,
    registers: [this.registry],
    collect: () => this.collectThrottle(),
  });
  readonly replicationWindows: Int32Array;
  readonly replicationWindow = new Gauge({
    name: 'keepwork_replication_window_seconds',
    help: 'The group-commit window a plain call’s commit waits now before its upload, the longest over the worker threads (replicationDelayMs idle, up to replicationDelayMaxMs busy)',
    registers: [this.registry],
    collect: () => {
      let longest = 0;
      for (let i = 0; i < this.replicationWindows.length; i++) longest = Math.max(longest, Atomics.load(this.replicationWindows, i));
      this.replicationWindow.set(longest / 1_000);
    },
  });
  readonly pendingAlarms = this.gauge('keepwork_timer_alarms', 'Alarms in this node’s timer');
  readonly heldActors = this.gauge('keepwork_held_actors', 'Actors this node holds');
  readonly holdTakes = new Counter({
    name: 'keepwork_hold_takes_total',
    help: 'Holds this node wrote to take an actor: after reading the hold (read), without reading it (expected; a new actor: created), and tries without a read that found another hold and read it after all (expected_missed, created_missed)',
    labelNames: ['how'] as const,
    registers: [this.registry],
  });
  readonly fenced = this.gauge(
    'keepwork_node_fenced',
    '1 from the moment this node found its lease fenced until it has rejoined under a new epoch',
  );
  readonly rejoins = this.counter('keepwork_node_rejoins_total', 'Times this node rejoined under a new epoch after its lease was fenced');
  readonly timerFull = this.counter(
    'keepwork_timer_full_total',
    'Alarms the timer could not hold (timerEntriesMax reached); they stay committed and indexed for the sweep',
  );
  readonly deliveryBacklog = this.gauge('keepwork_delivery_backlog', 'Deliveries queued or running');
  readonly deliveryConcurrency = this.gauge(
    'keepwork_delivery_concurrency',
    'Deliveries the node may run at once now: deliveryConcurrency, more while the bucket’s round trips are the limit',
  );
  readonly deliveriesRunning = this.gauge('keepwork_deliveries_running', 'Deliveries running now');
  readonly releaseBacklog = this.gauge(
    'keepwork_release_backlog',
    'Actors queued to be closed and released (idle, or past heldActorsMax), or being released',
  );

  /** A counter without labels, in this node's registry. */
  private counter(name: string, help: string): Counter {
    return new Counter({ name, help, registers: [this.registry] });
  }

  /** A gauge without labels, in this node's registry. */
  private gauge(name: string, help: string): Gauge {
    return new Gauge({ name, help, registers: [this.registry] });
  }

  constructor(shares = new WorkerShares()) {
    ({ mainRequests: this.mainRequests, workerRequests: this.workerRequests } = shares);
    ({ mainThrottle: this.mainThrottle, workerThrottle: this.workerThrottle } = shares);
    this.replicationWindows = new Int32Array(shares.replicationWindowsBuffer);
    collectDefaultMetrics({ register: this.registry, prefix: 'keepwork_process_' });
    // prom-client's gauges named like counters (`…_total`) fail `promtool check metrics`; the
    // same values stay in the `…_active_{handles,requests,resources}` gauges by type.
    for (const what of ['handles', 'requests', 'resources'])
      this.registry.removeSingleMetric(`keepwork_process_nodejs_active_${what}_total`);
  }

  /** Sets keepwork_hold_takes_total to the hold table's counts (holds.ts `takes`), as collectRequests does for requests. */
  countHoldTakes(takes: Record<keyof typeof HOLD_TAKE_LABELS, number>): void {
    this.holdTakes.reset();
    for (const [field, how] of Object.entries(HOLD_TAKE_LABELS)) this.holdTakes.inc({ how }, takes[field as keyof typeof HOLD_TAKE_LABELS]);
  }

  private collectRequests(): void {
    this.storeRequests.reset();
    for (const [thread, counts] of [
      ['main', this.mainRequests],
      ['worker', this.workerRequests],
    ] as const) {
      for (const { op, area, count } of counts.entries()) this.storeRequests.inc({ op, area, thread }, count);
    }
  }

  private collectThrottle(): void {
    this.storeThrottled.reset();
    this.storeThrottleExhausted.reset();
    for (const [thread, stats] of [
      ['main', this.mainThrottle],
      ['worker', this.workerThrottle],
    ] as const) {
      for (const { cls, throttled, exhausted, window } of stats.entries()) {
        this.storeThrottled.inc({ class: cls, thread }, throttled);
        this.storeThrottleExhausted.inc({ class: cls, thread }, exhausted);
        if (cls !== 'lease') this.storeWindow.set({ class: cls, thread }, window);
      }
    }
  }

  /** One sweep of `tenant`: its duration, what it read and offered, and how late its oldest overdue entry was at `nowMs`. */
  observeSweep(tenant: string, r: SweepResult, ms: number, nowMs: number): void {
    this.sweepDuration.observe({ tenant }, ms / 1000);
    this.sweepRead.inc({ tenant }, r.read);
    this.sweepOffered.inc({ tenant }, r.offered);
    this.sweepOfferedAnyones.inc({ tenant }, r.offeredAnyones ?? 0);
    this.indexLag.set({ tenant }, r.oldestDueMs === undefined ? 0 : Math.max(0, (nowMs - r.oldestDueMs) / 1000));
  }
}

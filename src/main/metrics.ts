/**
 * The node's Prometheus metrics (prom-client, one registry per node), served at GET /metrics.
 * Every series is documented in docs/operations.md.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { RequestCounts } from '../store/request-counts.js';
import { StatusFeed } from './status-feed.js';

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
  readonly staleRemoved = new Counter({
    name: 'keepwork_index_stale_removed_total',
    help: 'Stale index entries removed at delivery',
    registers: [this.registry],
  });
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
  /** Counted in shared memory by the main thread and every worker (src/store/request-counts.ts). */
  readonly mainRequests = new RequestCounts();
  readonly workerRequests = new RequestCounts();
  readonly storeRequests = new Counter({
    name: 'keepwork_store_requests_total',
    help: 'Bucket requests by operation, key area (alarms, state, holds, nodes, other) and thread (main, worker)',
    labelNames: ['op', 'area', 'thread'] as const,
    registers: [this.registry],
    collect: () => this.collectRequests(),
  });
  readonly pendingAlarms = new Gauge({ name: 'keepwork_timer_alarms', help: 'Alarms in this node’s timer', registers: [this.registry] });
  readonly heldActors = new Gauge({ name: 'keepwork_held_actors', help: 'Actors this node holds', registers: [this.registry] });
  readonly holdTakes = new Counter({
    name: 'keepwork_hold_takes_total',
    help: 'Holds this node wrote to take an actor: after reading the hold (read), without reading it (expected), and expected takes that found another hold and read it after all (expected_missed)',
    labelNames: ['how'] as const,
    registers: [this.registry],
  });
  readonly fenced = new Gauge({
    name: 'keepwork_node_fenced',
    help: '1 from the moment this node found its lease fenced until it has rejoined under a new epoch',
    registers: [this.registry],
  });
  readonly rejoins = new Counter({
    name: 'keepwork_node_rejoins_total',
    help: 'Times this node rejoined under a new epoch after its lease was fenced',
    registers: [this.registry],
  });
  readonly timerFull = new Counter({
    name: 'keepwork_timer_full_total',
    help: 'Alarms the timer could not hold (timerEntriesMax reached); they stay committed and indexed for the sweep',
    registers: [this.registry],
  });
  readonly deliveryBacklog = new Gauge({
    name: 'keepwork_delivery_backlog',
    help: 'Deliveries queued or running',
    registers: [this.registry],
  });
  readonly deliveryConcurrency = new Gauge({
    name: 'keepwork_delivery_concurrency',
    help: 'Deliveries the node may run at once now: deliveryConcurrency, more while the bucket’s round trips are the limit',
    registers: [this.registry],
  });
  readonly deliveriesRunning = new Gauge({
    name: 'keepwork_deliveries_running',
    help: 'Deliveries running now',
    registers: [this.registry],
  });
  readonly releaseBacklog = new Gauge({
    name: 'keepwork_release_backlog',
    help: 'Actors queued to be closed and released (idle, or past heldActorsMax), or being released',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'keepwork_process_' });
    // prom-client's gauges named like counters (`…_total`) fail `promtool check metrics`; the
    // same values stay in the `…_active_{handles,requests,resources}` gauges by type.
    for (const what of ['handles', 'requests', 'resources'])
      this.registry.removeSingleMetric(`keepwork_process_nodejs_active_${what}_total`);
  }

  /** Sets keepwork_hold_takes_total to the hold table's counts (holds.ts `takes`), as collectRequests does for requests. */
  countHoldTakes(takes: { read: number; expected: number; expectedMissed: number }): void {
    this.holdTakes.reset();
    this.holdTakes.inc({ how: 'read' }, takes.read);
    this.holdTakes.inc({ how: 'expected' }, takes.expected);
    this.holdTakes.inc({ how: 'expected_missed' }, takes.expectedMissed);
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
}

/** The status page's sampler (status-view.ts `sample`): what it reads, and that it does not render the metrics. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StatusView } from '../../src/http/status-view.js';
import { NodeMetrics } from '../../src/main/metrics.js';
import type { RoutingNode } from '../../src/main/node-api.js';
import { StatusFeed } from '../../src/main/status-feed.js';
import { MemoryStore } from '../../src/store/memory.js';

describe('status sampler', () => {
  it("samples the node's backlog, held actors, timer and the largest index lag, without rendering /metrics", async () => {
    const metrics = new NodeMetrics();
    metrics.indexLag.set({ tenant: 'a' }, 4);
    metrics.indexLag.set({ tenant: 'b' }, 9);
    metrics.deliveryBacklog.set(99); // a stale gauge: the sample reads the node itself
    const node = {
      store: new MemoryStore(),
      config: { marginMs: 15_000 },
      metrics,
      deliveryBacklog: () => 5,
      heldActors: () => 3,
      pendingAlarms: () => 2,
      metricsText: () => assert.fail('the sampler rendered the whole registry'),
    } as unknown as RoutingNode;
    const feed = new StatusFeed();
    await new StatusView(node, feed, () => 1_000).sample();
    const [s] = feed.samples.toArray();
    assert.deepEqual(
      { atMs: s!.atMs, backlog: s!.backlog, lagSeconds: s!.lagSeconds, held: s!.held, timer: s!.timer },
      { atMs: 1_000, backlog: 5, lagSeconds: 9, held: 3, timer: 2 },
    );
  });
});

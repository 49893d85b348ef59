/**
 * A node draining a stopped node's alarms while the bucket throttles 30 % of its writes (the fault
 * wrapper's slowdown mode on a folder bucket, for the node's whole life here so that no timing
 * decides whether the drain meets it; test/store/throttle/governor.test.ts has the 10 s burst on
 * virtual time): the drain goes on, every alarm runs, no request gives up, and the requests sent —
 * each request once, plus each throttle answer, a request sent again — stay within 1.5× the
 * requests the drain needed (the node's own counts, /metrics).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { RoutingNode } from '../../src/main/node-api.js';
import { pathToFileURL } from 'node:url';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const ALARMED = new URL('../fixtures/cluster/alarmed.ts', import.meta.url).href;
const LEASE = { leasePeriodMs: 3_000, graceMs: 500, skewBoundMs: 300 };
const K = 60;

const sum = (text: string, series: string) =>
  [...text.matchAll(new RegExp(`^${series}\\{[^}]*\\} (\\d+)`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);

describe('a drain under a 10 s burst of SlowDown', () => {
  it('goes on, loses nothing, and sends at most 1.5× the requests it needed', { timeout: 180_000 }, async () => {
    const dir = tempDirs('kw-drain-throttled-')();
    const folder = join(dir, 'bucket');
    const common = { classes: { Alarmed: ALARMED }, logger: silentLogger(), workerThreads: 1, idleTimeoutMs: 600_000, ...LEASE };
    const a = await startNode({ ...common, bucket: folder, dataDir: join(dir, 'a'), nodeId: 'a' });
    const names = Array.from({ length: K }, (_, i) => `t/Alarmed/x${i}`);
    const at = Date.now() + 10_000;
    await Promise.all(names.map((n) => a.actor(n).callDurable('arm', at)));
    await a.stop();
    assert.ok(Date.now() < at, 'arming and stopping took too long: the alarms came due on a');
    const bucket = `fault+${pathToFileURL(folder).href}?seed=1&slowdown=0.3`;
    const b = (await startNode({ ...common, bucket, dataDir: join(dir, 'b'), nodeId: 'b' })) as RoutingNode;
    try {
      const ran = async () => Number(/^keepwork_alarm_deliveries_total\{outcome="ran"\} (\d+)/m.exec(await b.metricsText())?.[1] ?? 0);
      await waitFor(`${K} alarms to run on b`, 150_000, async () => (await ran()) >= K, 200);
      for (const n of names) assert.ok(((await b.actor(n).call('fired')) as unknown[]).length >= 1, `${n} fired`);
      const text = await b.metricsText();
      const needed = sum(text, 'keepwork_store_requests_total');
      const throttled = sum(text, 'keepwork_store_throttled_total');
      assert.ok(throttled > 0, 'the burst throttled some writes');
      assert.equal(sum(text, 'keepwork_store_throttle_exhausted_total'), 0, 'no request gave up');
      assert.ok(needed + throttled <= 1.5 * needed, `sent ${needed + throttled} for ${needed} needed`);
    } finally {
      await b.stop();
    }
  });
});

/**
 * The status page's chart code (status-page-charts.ts), run in Node: the same text the browser
 * runs, its pure part (ticks, series, bins, bars) called through new Function.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CHART_JS } from '../../src/http/status-page-charts.js';

type Tick = { v: number; label: string; x: number; y: number };
interface Charts {
  niceStep(v: number): number;
  ticks(max: number, integer?: boolean): number[];
  fmtTick(v: number): string;
  lineModel(
    samples: object[],
    field: string,
    opts?: object,
  ): { points: string; count: number; now: number; yTicks: Tick[]; xTicks: Tick[]; y(v: number): number };
  outcomeBins(samples: object[], binMs: number, n: number): { endAgoS: number; ran: number; stale: number; kept: number; failed: number }[];
  barsModel(
    bins: object[],
    binMs: number,
  ): { rects: { outcome: string; n: number; h: number }[]; total: number; yTicks: Tick[]; xTicks: Tick[] };
}
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const c = new Function(`${CHART_JS}\nreturn { niceStep, ticks, fmtTick, lineModel, outcomeBins, barsModel };`)() as Charts;

const at = (s: number, o: object = {}) => ({
  atMs: 1_000_000 + s * 1000,
  backlog: 0,
  lagSeconds: 0,
  ran: 0,
  stale: 0,
  kept: 0,
  failed: 0,
  ...o,
});

describe('status page charts', () => {
  it('picks round steps and ticks from 0 to a round top at or above the max', () => {
    assert.deepEqual([0.3, 1, 1.5, 7, 12, 450].map(c.niceStep), [0.5, 1, 2, 10, 20, 500]);
    assert.deepEqual(c.ticks(0, true), [0, 1]);
    assert.deepEqual(c.ticks(7, true), [0, 2, 4, 6, 8]);
    assert.deepEqual(c.ticks(16.5), [0, 5, 10, 15, 20]);
    assert.deepEqual(c.ticks(0.2), [0, 0.2]);
    assert.deepEqual(c.ticks(300, true), [0, 100, 200, 300]);
    assert.deepEqual([0, 0.5, 15, 2000, 2500].map(c.fmtTick), ['0', '0.5', '15', '2k', '2.5k']);
  });

  it('draws one field of the samples: a point each, the newest at the right, seconds ago on x', () => {
    const samples = [at(0, { backlog: 2 }), at(10, { backlog: 7 }), at(20, { backlog: 3 })];
    const m = c.lineModel(samples, 'backlog', { integer: true });
    assert.equal(m.count, 3);
    assert.equal(m.now, 3);
    assert.deepEqual(
      m.yTicks.map((t) => t.label),
      ['0', '2', '4', '6', '8'],
    );
    assert.deepEqual(
      m.xTicks.map((t) => t.label),
      ['0', '5', '10', '15', '20'],
    );
    const pts = m.points.split(' ').map((p) => p.split(',').map(Number));
    assert.equal(pts.length, 3);
    assert.ok(pts[0]![0]! < pts[1]![0]! && pts[1]![0]! < pts[2]![0]!, 'oldest left');
    assert.equal(pts[1]![1], Number(m.y(7).toFixed(1)));
    assert.equal(m.xTicks[0]!.v, 0);
    assert.equal(Number(m.xTicks[0]!.x.toFixed(1)), pts[2]![0], 'the newest point is at 0 s ago');
  });

  it('raises the lag axis to show the margin line even when the lag is 0', () => {
    const m = c.lineModel([at(0), at(1)], 'lagSeconds', { floor: 16.5 });
    assert.deepEqual(
      m.yTicks.map((t) => t.v),
      [0, 5, 10, 15, 20],
    );
  });

  it('bins deliveries by outcome, newest bin last, and stacks them into bars with a count axis', () => {
    const samples = [
      at(0, { ran: 1 }),
      at(5, { failed: 2 }),
      at(12, { ran: 3, stale: 1 }),
      at(25, { kept: 1, ran: 1 }),
      at(29, { failed: 1 }),
    ];
    const bins = c.outcomeBins(samples, 10_000, 3);
    assert.deepEqual(
      bins.map((b) => [b.endAgoS, b.ran, b.stale, b.kept, b.failed]),
      [
        [20, 1, 0, 0, 2], // 20–30 s ago: samples at 0 and 5 (newest is at 29)
        [10, 3, 1, 0, 0],
        [0, 1, 0, 1, 1],
      ],
    );
    assert.deepEqual(c.outcomeBins([], 10_000, 3), []);
    const bars = c.barsModel(bins, 10_000);
    assert.equal(bars.total, 10);
    assert.deepEqual(
      bars.rects.map((r) => `${r.outcome}=${r.n}`),
      ['ran=1', 'failed=2', 'ran=3', 'stale=1', 'ran=1', 'kept=1', 'failed=1'],
    );
    assert.ok(bars.rects.every((r) => r.h > 0));
    assert.deepEqual(
      bars.yTicks.map((t) => t.v),
      [0, 1, 2, 3, 4],
    );
    assert.deepEqual(
      bars.xTicks.map((t) => t.v),
      [0, 10, 20, 30],
    );
  });
});

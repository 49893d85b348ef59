/**
 * The benchmarks' pure helpers (nothing timing-based here): percentiles, the SVG chart, the
 * /metrics parser, the store ceiling, and the backlog copy's keys.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { entryKey, parseEntryKey } from '../../src/alarms/keys.js';
import { percentile } from '../../bench/lib.js';
import { copyPuts } from '../../bench/support/backlog.js';
import { ceiling } from '../../bench/support/ceiling.js';
import { byLabel, diff, parseProm, total } from '../../bench/support/prom.js';
import { lineChart, niceTicks } from '../../bench/support/svg-chart.js';

describe('bench helpers', () => {
  it('percentile picks from a sorted list', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.equal(percentile(xs, 50), 51);
    assert.equal(percentile(xs, 99), 100);
    assert.ok(Number.isNaN(percentile([], 50)));
  });

  it('the line chart is one SVG with a polyline and a legend entry per series, labels escaped', () => {
    const svg = lineChart({
      title: 'a < b',
      xLabel: 's',
      yLabel: 'n',
      series: [
        {
          label: 'one & two',
          points: [
            [0, 0],
            [1, 10],
            [2, 20],
          ],
        },
        {
          label: 'three',
          points: [
            [0, 0],
            [3, 5],
          ],
        },
      ],
    });
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.match(svg, /<\/svg>\n$/);
    assert.equal(svg.match(/<polyline /g)?.length, 2);
    assert.ok(svg.includes('one &amp; two') && svg.includes('a &lt; b'));
    assert.ok(!/NaN|undefined/.test(svg));
  });

  it('nice ticks cover the maximum in steps of 1, 2 or 5 times a power of ten', () => {
    assert.deepEqual(niceTicks(9), [0, 2, 4, 6, 8, 10]);
    assert.deepEqual(niceTicks(1000), [0, 200, 400, 600, 800, 1000]);
    assert.deepEqual(niceTicks(0), [0, 1]);
  });

  it('parses Prometheus text, sums by label and takes differences', () => {
    const s = parseProm(
      ['# HELP x', 'keepwork_store_requests_total{op="get"} 5', 'keepwork_store_requests_total{op="put"} 2', 'up 1'].join('\n'),
    );
    assert.equal(total(s, 'keepwork_store_requests_total'), 7);
    assert.deepEqual(byLabel(s, 'keepwork_store_requests_total', 'op'), { get: 5, put: 2 });
    assert.deepEqual(diff({ get: 5, put: 2 }, { get: 3, put: 2 }), { get: 2 });
  });

  it('the ceiling prices each operation at its own rate', () => {
    const rates = { get: 1000, put: 100, create: 100, list: 500, delete: 200 };
    // 1 put (10 ms) + 2 gets (2 ms) + 1 list (2 ms) = 14 ms per delivery
    assert.equal(Math.round(ceiling(rates, { put: 1, get: 2, list: 1 })), Math.round(1000 / 14));
    assert.equal(ceiling(rates, {}), Infinity);
  });

  it('a backlog copy has the template’s objects under the new name, with the template’s tag', () => {
    const tmpl = parseAddress('t/C/a0');
    const e = { address: tmpl, dueMs: 1_900_000_000_000, tag: { generation: 3, nonce: 'beef' } };
    const body = new Uint8Array([1, 2, 3]);
    const puts = copyPuts({ links: [{ suffix: '00000000000000000001', body }], hold: body, entries: [e] }, parseAddress('t/C/a7'));
    const keys = puts.map(([k]) => k);
    assert.ok(keys.some((k) => k.startsWith('state/t/C/') && k.endsWith('/00000000000000000001')));
    assert.ok(keys.some((k) => k.startsWith('holds/t/C/')));
    const entry = keys.map(parseEntryKey).find((x) => x !== undefined)!;
    assert.equal(entry.address.name, 'a7');
    assert.deepEqual(entry.tag, e.tag);
    assert.notEqual(entryKey(entry), entryKey(e));
  });
});

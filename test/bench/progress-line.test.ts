import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProgressLine } from '../../src/bench/progress-line.js';

function sink(isTTY: boolean) {
  const writes: string[] = [];
  return { out: { isTTY, write: (t: string) => writes.push(t) }, writes };
}

describe('ProgressLine', () => {
  it('on a terminal: one line rewritten in place, at most every 250 ms, with the rate and the ETA', () => {
    const { out, writes } = sink(true);
    const p = new ProgressLine(out);
    p.update('drain', 100, 1000, 'delivered', 50, { nowMs: 0 });
    p.update('drain', 150, 1000, 'delivered', 50, { nowMs: 100 }); // too soon
    p.update('drain', 200, 1000, 'delivered', 50, { nowMs: 300 });
    p.end();
    assert.deepEqual(writes, [
      '\r\x1b[Kdrain: 100/1000 delivered  50 delivered/s  ETA 18 s',
      '\r\x1b[Kdrain: 200/1000 delivered  50 delivered/s  ETA 16 s',
      '\n',
    ]);
  });

  it('elsewhere: a plain line at most every 5 s; a given ETA and rate unit; no ETA when the rate is unknown', () => {
    const { out, writes } = sink(false);
    const p = new ProgressLine(out);
    p.update('calls', 1, 10, 's', 120.4, { nowMs: 0, etaS: 8.5, rateUnit: 'calls/s' });
    p.update('calls', 2, 10, 's', 120, { nowMs: 4_000, etaS: 7, rateUnit: 'calls/s' });
    p.update('drain', 0, 10, 'delivered', NaN, { nowMs: 5_000 });
    p.note('done');
    assert.deepEqual(writes, ['calls: 1/10 s  120 calls/s  ETA 9 s\n', 'drain: 0/10 delivered\n', 'done\n']);
  });
});

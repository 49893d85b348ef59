/**
 * The wire profiles of a plan (plan.ts `wire`): drawn from the seed, the same on every call, each
 * request's latency within 20–200 ms, and every kind drawn over the node runs of a few seeds.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRun } from './plan.js';

describe('Plan.wire', () => {
  it('is a function of the seed, node and run, within the documented bounds', () => {
    const names = new Set<string>();
    for (let seed = 1; seed <= 20; seed++) {
      const a = planRun({ seed, chaosMs: 60_000, nodes: 3 });
      const b = planRun({ seed, chaosMs: 60_000, nodes: 3 });
      for (let node = 0; node < 3; node++)
        for (let run = 0; run < 4; run++) {
          const w = a.wire(node, run);
          assert.deepEqual(w, b.wire(node, run));
          names.add(w.name);
          if (w.name === 'off') {
            assert.equal(w.faults, undefined);
            continue;
          }
          const l = w.faults!.latencyMs!;
          assert.ok(l.min >= 20 && l.max <= 200 && l.max - l.min >= 20, JSON.stringify(l));
          assert.equal(w.faults!.slowDown !== undefined, w.name === 'slowDown' || w.name === 'mixed');
          assert.equal(w.faults!.reset !== undefined, w.name === 'reset' || w.name === 'mixed');
          assert.equal(w.faults!.late !== undefined, w.name === 'reset' || w.name === 'mixed');
        }
    }
    assert.deepEqual([...names].sort(), ['latency', 'mixed', 'off', 'reset', 'slowDown']);
  });

  it('differs between runs of a node and between seeds', () => {
    const p = planRun({ seed: 2, chaosMs: 60_000, nodes: 3 });
    const q = planRun({ seed: 3, chaosMs: 60_000, nodes: 3 });
    const all = (x: typeof p) => JSON.stringify(Array.from({ length: 3 }, (_, n) => [0, 1, 2, 3].map((k) => x.wire(n, k))));
    assert.notEqual(all(p), all(q));
    assert.notEqual(JSON.stringify(p.wire(0, 0)), JSON.stringify(p.wire(0, 1)));
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { beginEvent, newStartGate, revokeTask } from '../../src/workers/start-gate.js';

describe('start gate: which events of a task had begun when it was given up', () => {
  it('counts the head of the task whose handlers began; once revoked, no handler begins', () => {
    const gate = newStartGate();
    assert.equal(beginEvent(gate, 0), true);
    assert.equal(beginEvent(gate, 2), true, 'event 1 ran without a handler (a repeat, NOT_FOUND): it is in the head too');
    assert.equal(revokeTask(gate), 3);
    assert.equal(beginEvent(gate, 3), false);
    assert.equal(beginEvent(gate, 0), false, 'not even an event already counted');
    assert.equal(revokeTask(gate), 3, 'revoking again tells the same');
  });

  it('a task given up before any handler began: nothing of it ran', () => {
    const gate = newStartGate();
    assert.equal(revokeTask(gate), 0);
    assert.equal(beginEvent(gate, 0), false);
  });

  it('any order of begins and a revoke: the events that began are exactly those below the count', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(20), { maxLength: 30 }), fc.nat(30), (indexes, revokeAt) => {
        // A batch's events begin in order (indexes sorted); the revoke comes between any two.
        const order = [...indexes].sort((a, b) => a - b);
        const gate = newStartGate();
        const begun: number[] = [];
        let count = -1;
        order.forEach((i, k) => {
          if (k === revokeAt) count = revokeTask(gate);
          if (beginEvent(gate, i)) begun.push(i);
        });
        if (count < 0) count = revokeTask(gate);
        assert.ok(
          begun.every((i) => i < count),
          `began ${begun.join(',')}, count ${count}`,
        );
        assert.equal(count, begun.length ? Math.max(...begun) + 1 : 0);
      }),
    );
  });
});

/**
 * The hard limit's stop signal (worker-group.ts StopSignal): what `submit` relies on of it — a
 * listener runs once when the signal stops, at once if it already has, and never once removed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StopSignal } from '../../src/main/worker-group.js';

describe('StopSignal', () => {
  it('runs its listener once, when stopped', () => {
    const s = new StopSignal();
    let runs = 0;
    s.listen(() => runs++);
    assert.equal(runs, 0);
    s.stop();
    s.stop();
    assert.equal(runs, 1);
    assert.equal(s.stopped, true);
  });

  it('runs a listener added after the stop at once', () => {
    const s = new StopSignal();
    s.stop();
    let runs = 0;
    s.listen(() => runs++);
    assert.equal(runs, 1);
  });

  it('never runs a removed listener', () => {
    const s = new StopSignal();
    let runs = 0;
    const unlisten = s.listen(() => runs++);
    unlisten();
    s.stop();
    assert.equal(runs, 0);
  });

  it('removing an earlier listener leaves the current one', () => {
    const s = new StopSignal();
    const seen: string[] = [];
    const first = s.listen(() => seen.push('first'));
    s.listen(() => seen.push('second'));
    first();
    s.stop();
    assert.deepEqual(seen, ['second']);
  });
});

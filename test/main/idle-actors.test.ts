import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress, type ActorAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { ActorLanes } from '../../src/main/actor-lanes.js';
import { IdleActors, REAP_CONCURRENCY } from '../../src/main/idle-actors.js';
import { ClockScheduler } from '../../src/streams/clock-scheduler.js';

function setup(heldActorsMax: number, idleTimeoutMs = 60_000, release?: (name: string) => Promise<void>) {
  const clock = new SimClock(0);
  const released: string[] = [];
  const idle = new IdleActors({
    clock,
    config: { idleTimeoutMs, heldActorsMax },
    log: silentLogger(),
    lanes: new ActorLanes(16),
    workers: { run: async () => ({ type: 'ok', alarmAt: null, deleted: false, ran: false }) as never },
    holds: { release: async (a: ActorAddress) => (released.push(a.name), release?.(a.name)) },
    scheduler: new ClockScheduler(clock),
    stopping: () => false,
  });
  const use = (name: string) => idle.used(`t/C/${name}`, parseAddress(`t/C/${name}`));
  return { clock, idle, released, use };
}

describe('IdleActors', () => {
  it('releases actors idle past idleTimeoutMs, and only those', async () => {
    const { clock, idle, released, use } = setup(100, 1_000);
    use('a');
    await clock.advance(600);
    use('b');
    await clock.advance(600);
    assert.deepEqual(released, ['a']);
    await clock.advance(1_000);
    assert.deepEqual(released, ['a', 'b']);
    idle.stop();
  });

  it('past heldActorsMax, the least recently used are released before they are idle', async () => {
    const { clock, idle, released, use } = setup(2);
    for (const n of ['a', 'b', 'c', 'd']) use(n);
    use('a'); // used again: now the most recent
    await clock.advance(15_000); // one reaper round (idleTimeoutMs / 4), nothing idle yet
    assert.deepEqual(released, ['b', 'c'], 'the two least recently used, down to the cap');
    assert.equal(idle.usedWithin('t/C/a', 60_000), true);
    assert.equal(idle.usedWithin('t/C/d', 60_000), true);
    idle.stop();
  });

  it('releases several actors at once, so a node can let actors go as fast as it takes them on', async () => {
    const waiting: (() => void)[] = [];
    const { clock, idle, released, use } = setup(1, 60_000, () => new Promise<void>((resolve) => waiting.push(resolve)));
    const names = Array.from({ length: REAP_CONCURRENCY + 5 }, (_, i) => `n${i}`);
    for (const n of names) use(n);
    await clock.advance(15_000); // one reaper round: every one but the newest is over the cap
    assert.equal(released.length, REAP_CONCURRENCY, 'as many releases in flight as REAP_CONCURRENCY, none finished yet');
    assert.deepEqual(released, names.slice(0, REAP_CONCURRENCY), 'least recently used first');
    while (waiting.length > 0) {
      waiting.splice(0).forEach((done) => done());
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.deepEqual(released, names.slice(0, -1), 'then the rest, down to the cap');
    idle.stop();
  });
});

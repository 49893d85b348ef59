import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress, type ActorAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { ActorLanes } from '../../src/main/actor-lanes.js';
import { IdleActors } from '../../src/main/idle-actors.js';
import { ClockScheduler } from '../../src/streams/clock-scheduler.js';

function setup(heldActorsMax: number, idleTimeoutMs = 60_000) {
  const clock = new SimClock(0);
  const released: string[] = [];
  const idle = new IdleActors({
    clock,
    config: { idleTimeoutMs, heldActorsMax },
    log: silentLogger(),
    lanes: new ActorLanes(16),
    workers: { run: async () => ({ type: 'ok', alarmAt: null, deleted: false, ran: false }) as never },
    holds: { release: async (a: ActorAddress) => void released.push(a.name) },
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
});

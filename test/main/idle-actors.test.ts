import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress, type ActorAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { ActorLanes } from '../../src/main/actor-lanes.js';
import { IdleActors, REAP_CONCURRENCY, REAP_WAITING_MAX } from '../../src/main/idle-actors.js';
import type { ActorEvent } from '../../src/workers/messages.js';
import { ClockScheduler } from '../../src/core/clock-scheduler.js';

function setup(heldActorsMax: number, idleTimeoutMs = 60_000, release?: (name: string) => Promise<void>) {
  const clock = new SimClock(0);
  const released: string[] = [];
  const closeTasks: string[] = [];
  const idle = new IdleActors({
    clock,
    config: { idleTimeoutMs, heldActorsMax },
    log: silentLogger(),
    lanes: new ActorLanes(16),
    workers: {
      run: async (e: ActorEvent) =>
        (closeTasks.push('address' in e ? e.address.name : e.type), { type: 'ok', alarmAt: null, deleted: false, ran: false }) as never,
    },
    holds: { release: async (a: ActorAddress) => (released.push(a.name), release?.(a.name)) },
    scheduler: new ClockScheduler(clock),
    stopping: () => false,
  });
  const use = (name: string) => idle.used(parseAddress(`t/C/${name}`));
  return { clock, idle, released, closeTasks, use };
}

/** Lets queued releases and promise callbacks run (no timers: the clock is simulated). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
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

  it('past heldActorsMax, the least recently used is released as soon as one more is taken on', async () => {
    const { idle, released, use } = setup(2);
    use('a');
    use('b');
    use('a'); // used again: now the most recent
    use('c');
    await settle();
    assert.deepEqual(released, ['b'], 'the least recently used, without waiting for a reaper round');
    use('d');
    await settle();
    assert.deepEqual(released, ['b', 'a']);
    assert.equal(idle.usedWithin('t/C/c', 60_000), true);
    assert.equal(idle.usedWithin('t/C/d', 60_000), true);
    assert.equal(idle.usedWithin('t/C/a', 60_000), false, 'released: no longer counted as used');
    idle.stop();
  });

  it('an actor whose last event left nothing open is released without a task for its worker; one used since is closed first', async () => {
    const { idle, released, closeTasks, use } = setup(1);
    use('a');
    idle.closed(parseAddress('t/C/a')); // its delivery ran in memory
    use('b'); // over the cap: a goes
    await settle();
    assert.deepEqual(released, ['a']);
    assert.deepEqual(closeTasks, [], 'closed already: only its hold is released');
    idle.closed(parseAddress('t/C/b'));
    use('b'); // used again after it was closed: it may be open now
    use('c');
    await settle();
    assert.deepEqual(released, ['a', 'b']);
    assert.deepEqual(closeTasks, ['b'], 'used since it was closed: its worker closes it before the release');
    idle.stop();
  });

  it('room() holds new actors back while REAP_WAITING_MAX releases wait, and lets them on once releases keep up', async () => {
    const waiting: (() => void)[] = [];
    const { idle, released, use } = setup(1, 60_000, () => new Promise<void>((resolve) => waiting.push(resolve)));
    let room = false;
    const roomNow = async () => {
      room = false;
      void idle.room().then(() => (room = true));
      await settle();
      return room;
    };
    assert.equal(await roomNow(), true, 'nothing waits to be released');
    // One over the cap each: REAP_CONCURRENCY releases run (blocked), the rest wait in the queue.
    for (let i = 0; i <= REAP_CONCURRENCY + REAP_WAITING_MAX; i++) use(`n${i}`);
    await settle();
    assert.equal(released.length, REAP_CONCURRENCY);
    assert.equal(idle.backlog(), REAP_CONCURRENCY + REAP_WAITING_MAX, 'running and waiting releases, as keepwork_release_backlog shows');
    assert.equal(await roomNow(), false, `${REAP_WAITING_MAX} releases wait: no room for another actor`);
    waiting.splice(0, 1).forEach((done) => done());
    await settle();
    assert.equal(room, true, 'one release ended, one waiting release started: room again');
    while (waiting.length > 0) {
      waiting.splice(0).forEach((done) => done());
      await settle();
    }
    assert.equal(released.length, REAP_CONCURRENCY + REAP_WAITING_MAX, 'every actor over the cap released');
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
      await settle();
    }
    assert.deepEqual(released, names.slice(0, -1), 'then the rest, down to the cap');
    idle.stop();
  });
});

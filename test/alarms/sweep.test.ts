import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatAddress, parseAddress, type ActorAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { ErrorCode, isKeepworkError, StoreUnavailable } from '../../src/core/errors.js';
import { silentLogger, type Logger } from '../../src/core/logger.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { SeededRandom } from '../../src/core/random.js';
import { dueBound, entryKey } from '../../src/alarms/keys.js';
import { compareKeys } from '../../src/store/keys.js';
import { resolveOptions, type KeepworkOptions } from '../../src/core/config.js';
import { MemoryStore } from '../../src/store/memory.js';
import { FIRST_LIST_KEYS, Sweeper, type SweepHost } from '../../src/alarms/sweep.js';
import { ClockScheduler } from '../../src/core/clock-scheduler.js';
import { shardOwner } from '../../src/alarms/shard.js';

const NOW = 1_900_000_000_000;

/** A sweeper of tenant `t` on node n1 (serving `classes`, with `others` live), its host a stand-in that records what it is offered. */
function setup(options: KeepworkOptions = {}, classes = ['C'], others: string[] = [], extra: Partial<SweepHost> & { log?: Logger } = {}) {
  const clock = new SimClock(NOW);
  const store = new MemoryStore({ clock });
  const config = resolveOptions(options);
  const offered: { address: ActorAddress; dueMs: number; generation?: number }[] = [];
  let backlog = 0;
  const busy = new Set<string>();
  const self = { nodeId: 'n1', tenants: null, classes };
  const { log = silentLogger(), ...hostExtra } = extra;
  const host: SweepHost = {
    sweepNode: () => self,
    liveNodes: async () => [self, ...others.map((nodeId) => ({ nodeId, tenants: null, classes }))],
    isBusy: (key) => busy.has(key),
    offerEntry: (address, dueMs, generation) => (offered.push({ address, dueMs, generation }), true),
    deliveryBacklog: () => backlog,
    tenantsToSweep: async () => ['t'],
    ...hostExtra,
  };
  const seams = { store, clock, random: new SeededRandom(1), config, log, scheduler: new ClockScheduler(clock) };
  const sweeper = new Sweeper(seams, host);
  const add = (name: string, overdueMs: number, className = 'C', generation = 1) =>
    store.put(
      entryKey({ address: parseAddress({ tenant: 't', className, name }), dueMs: NOW - overdueMs, tag: { generation, nonce: 'ab' } }),
      new Uint8Array(0),
    );
  return { clock, store, config, sweeper, offered, busy, add, setBacklog: (n: number) => (backlog = n) };
}

describe('the sweep', () => {
  it('reads only entries overdue by lease + grace, and offers them', async () => {
    const s = setup();
    await s.add('old', 20_000);
    await s.add('fresh', 5_000);
    const r = await s.sweeper.sweepTenant('t');
    assert.deepEqual(
      s.offered.map((o) => o.address.name),
      ['old'],
    );
    assert.equal(r.read, 1);
    assert.equal(r.nextDueMs, NOW - 5_000, 'the first entry not yet overdue enough');
    assert.equal(r.full, false);
  });

  it('offers each entry with the generation in its tag (the hold its delivery expects to find)', async () => {
    const s = setup();
    await s.add('a', 20_000, 'C', 7);
    await s.add('b', 20_000, 'C', 2);
    await s.sweeper.sweepTenant('t');
    assert.deepEqual(
      s.offered.map((o) => [o.address.name, o.generation]),
      [
        ['a', 7],
        ['b', 2],
      ],
    );
  });

  it('reads at most sweepPageEntries per sweep and resumes after the last entry read (past stuck entries)', async () => {
    const s = setup({ sweepPageEntries: 10, deliveriesPerSweep: 100 }, ['C']);
    for (let i = 0; i < 25; i++) await s.add(`stuck${String(i).padStart(2, '0')}`, 60_000 + i, 'Unserved'); // nobody here can act on them
    await s.add('zz-real', 50_000);
    const seen: number[] = [];
    for (let sweep = 0; sweep < 3; sweep++) {
      const r = await s.sweeper.sweepTenant('t');
      seen.push(r.read);
    }
    assert.deepEqual(seen, [10, 10, 6]);
    assert.deepEqual(
      s.offered.map((o) => o.address.name),
      ['zz-real'],
      'the real entry is reached behind the stuck ones',
    );
    const again = await s.sweeper.sweepTenant('t');
    assert.equal(again.read, 10, 'after reading through, the next sweep starts from the beginning again');
  });

  it('offers at most deliveriesPerSweep; the rest on the next sweeps (resuming after the delivery cap)', async () => {
    const s = setup({ deliveriesPerSweep: 4, anyonesDeliveriesPerSweep: 0 });
    for (let i = 0; i < 10; i++) await s.add(`a${i}`, 20_000 + i);
    const r1 = await s.sweeper.sweepTenant('t');
    assert.equal(r1.offered, 4);
    assert.equal(r1.full, true);
    for (const o of s.offered) s.busy.add(formatAddress(o.address)); // now in flight
    await s.sweeper.sweepTenant('t');
    assert.equal(new Set(s.offered.map((o) => o.address.name)).size, 8, 'in-flight entries do not count against the cap');
  });

  it('no stall: entries read but left behind by the delivery cap are offered by the next sweeps, not after alarmSweepMs', async () => {
    // 2,100 of this node's entries overdue at once: a page of 2,048 read, 256 offered per sweep.
    // The cursor must stop after the last entry offered, not after the last read: past all 2,048,
    // the next sweep would read the last 52, reach the end with fewer than 256 planned, count as
    // not full and wait alarmSweepMs with 1,792 due behind it.
    let sweeps = 0;
    const offered: string[] = [];
    const busy = new Set<string>();
    const offerEntry = (a: ActorAddress) => (busy.add(a.key), offered.push(a.name), true); // in flight once offered
    const s = setup({}, ['C'], [], { swept: () => void sweeps++, offerEntry, isBusy: (key) => busy.has(key) });
    assert.deepEqual([s.config.sweepPageEntries, s.config.deliveriesPerSweep, s.config.alarmSweepMs], [2048, 256, 10_000]);
    const total = 2_100;
    for (let i = 0; i < total; i++) await s.add(`e${String(i).padStart(5, '0')}`, 20_000 + total - i);
    s.sweeper.start();
    const slowestRate = Math.ceil(total / s.config.deliveriesPerSweep) * (s.config.sweepMinGapMs + 1);
    await s.clock.advance(slowestRate);
    assert.equal(new Set(offered).size, total, `all offered within ${slowestRate} ms (${sweeps} sweeps)`);
    assert.equal(offered.length, total, 'each once');
    s.sweeper.stop();
  });

  it('a sweep that stops at the first entry not yet due with own entries left behind counts as full, and the next resumes at them', async () => {
    const s = setup({ deliveriesPerSweep: 4, anyonesDeliveriesPerSweep: 0 });
    for (let i = 0; i < 6; i++) await s.add(`a${i}`, 20_000 - i);
    await s.add('later', -60_000);
    const r1 = await s.sweeper.sweepTenant('t');
    assert.deepEqual([r1.read, r1.offered, r1.full], [6, 4, true], 'left a4, a5 behind: full, though it reached the bound');
    const r2 = await s.sweeper.sweepTenant('t');
    assert.deepEqual([r2.read, r2.offered, r2.full], [2, 2, false], 'resumed at a4 (a0..a3 not read again)');
    assert.deepEqual(
      s.offered.map((o) => o.address.name),
      ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'],
    );
  });

  it('the cursor still advances when the cap leaves the first entry read behind (every delivery kept for anyone’s)', async () => {
    const s = setup({ deliveriesPerSweep: 2, anyonesDeliveriesPerSweep: 2 }, ['C'], ['n2']);
    const names = Array.from({ length: 40 }, (_, i) => `e${String(i).padStart(2, '0')}`);
    for (const n of names) await s.add(n, 4 * s.config.marginMs + 100 - Number(n.slice(1)));
    const starts: (string | undefined)[] = [];
    const list = s.store.list.bind(s.store);
    let first = true;
    s.store.list = (o) => (first && starts.push(o?.startAfter), (first = false), list(o));
    for (let i = 0; i < 6; i++) {
      first = true;
      const r = await s.sweeper.sweepTenant('t');
      assert.equal(r.full, true, 'entries it could deliver are left: sweep again soon');
    }
    for (let i = 1; i < starts.length; i++) {
      assert.ok(starts[i] === undefined || starts[i] !== starts[i - 1], `the cursor moved or wrapped: ${starts.join(' | ')}`);
    }
  });

  it('a backlog’s entries are each read about once: a sweep stops listing once its plan is full', async () => {
    // Defaults: pages of 2,048, 256 deliveries per sweep. A sweep that read a whole page and
    // offered 256 of it would read every entry of a backlog about eight times before offering it.
    const s = setup();
    const listed: number[] = [];
    const list = s.store.list.bind(s.store);
    s.store.list = async (o) => {
      const page = await list(o);
      listed.push(page.keys.length);
      return page;
    };
    const total = 3_000;
    for (let i = 0; i < total; i++) await s.add(`e${String(i).padStart(5, '0')}`, 20_000 + total - i);
    const perSweep: number[] = [];
    while (s.offered.length < total && perSweep.length < 50) {
      const from = s.offered.length;
      const r = await s.sweeper.sweepTenant('t');
      perSweep.push(r.offered);
      for (const o of s.offered.slice(from))
        await s.store.delete(entryKey({ address: o.address, dueMs: o.dueMs, tag: { generation: 1, nonce: 'ab' } })); // delivered
    }
    assert.equal(new Set(s.offered.map((o) => formatAddress(o.address))).size, total, 'every entry offered once');
    assert.ok(
      perSweep.slice(0, -1).every((n) => n === s.config.deliveriesPerSweep),
      `each sweep but the last offers a full cap: ${perSweep.join(' ')}`,
    );
    const read = listed.reduce((a, b) => a + b, 0);
    assert.ok(read <= 1.5 * total, `${read} keys listed to offer ${total} (${listed.join(' ')})`);
  });

  it('with another live node, a sweep reads until its own entries and anyone’s reserve are both filled', async () => {
    const s = setup({}, ['C'], ['n2']);
    const names = Array.from({ length: 3_000 }, (_, i) => `e${String(i).padStart(5, '0')}`);
    for (const n of names) await s.add(n, 4 * s.config.marginMs + 3_000 - Number(n.slice(1)));
    const r = await s.sweeper.sweepTenant('t');
    const reserve = s.config.anyonesDeliveriesPerSweep;
    assert.deepEqual([r.offered, r.offeredAnyones], [s.config.deliveriesPerSweep, reserve]);
    assert.ok(r.read < s.config.sweepPageEntries / 2, `${r.read} entries read for a plan of ${r.offered}`);
    const theirs = names.slice(0, r.read).filter((n) => shardOwner(`t/C/${n}`, ['n1', 'n2']) === 'n2').length;
    assert.ok(
      r.read - theirs >= s.config.deliveriesPerSweep - reserve && theirs >= reserve,
      'both parts of the plan were filled before it stopped',
    );
    assert.equal(r.full, true);
  });

  it('lists a small page first and doubles it: few overdue entries cost one short LIST, a backlog a few more', async () => {
    const s = setup({ sweepPageEntries: 2048, deliveriesPerSweep: 4096 });
    const asked: number[] = [];
    const list = s.store.list.bind(s.store);
    s.store.list = (o) => (asked.push(o?.maxKeys ?? 1000), list(o));
    for (let i = 0; i < 5; i++) await s.add(`due${i}`, 20_000 + i);
    for (let i = 0; i < 300; i++) await s.add(`later${i}`, -60_000 - i);
    const few = await s.sweeper.sweepTenant('t');
    assert.deepEqual([few.read, asked], [5, [FIRST_LIST_KEYS]]);
    for (let i = 0; i < 3_000; i++) await s.add(`backlog${i}`, 30_000 + i);
    asked.length = 0;
    const many = await s.sweeper.sweepTenant('t');
    assert.equal(many.read, 2048, 'a full page');
    assert.deepEqual(asked, [128, 256, 512, 1000, 152]);
    asked.length = 0;
    const next = await s.sweeper.sweepTenant('t');
    assert.equal(next.read, 957, 'the rest of the backlog, up to the entries not yet due');
    assert.deepEqual(asked, [2048], 'after a full page, the next sweep of the backlog asks for a whole page at once');
    asked.length = 0;
    await s.sweeper.sweepTenant('t');
    assert.equal(asked[0], FIRST_LIST_KEYS, 'the backlog gone, a sweep starts small again');
  });

  it('counts the entries it offers from another live node’s shard (anyone’s, three margins overdue) apart from its own', async () => {
    const s = setup({}, ['C'], ['n2']);
    const margin = s.config.marginMs;
    const names = Array.from({ length: 40 }, (_, i) => `e${i}`);
    const theirs = names.filter((n) => shardOwner(`t/C/${n}`, ['n1', 'n2']) === 'n2');
    for (const n of names) await s.add(n, 4 * margin);
    const r = await s.sweeper.sweepTenant('t');
    assert.ok(theirs.length > 0 && theirs.length < names.length);
    assert.deepEqual([r.offered, r.offeredAnyones], [names.length, theirs.length]);
  });

  it('adaptive cadence: a full sweep that found the delivery queue full sweeps again as soon as it has room, not a whole alarmSweepMs later', async () => {
    let sweeps = 0;
    let makeRoom = () => {};
    const extra: Partial<SweepHost> = {
      swept: () => void sweeps++,
      deliveryRoom: () => new Promise<void>((resolve) => (makeRoom = resolve)),
    };
    const s = setup({ deliveriesPerSweep: 4, alarmSweepMs: 10_000 }, ['C'], [], extra);
    for (let i = 0; i < 20; i++) await s.add(`e${i}`, 20_000 + i);
    s.setBacklog(4); // the queue is full
    s.sweeper.start();
    await s.clock.advance(1);
    assert.equal(sweeps, 1);
    assert.equal(s.sweeper.waitsForRoom({ read: 20, offered: 4, planned: 4, full: true }), true);
    await s.clock.advance(5_000);
    assert.equal(sweeps, 1, 'no room: no sweep');
    s.setBacklog(1);
    makeRoom();
    await s.clock.advance(1);
    assert.equal(sweeps, 2, 'room: the next sweep at once (sweepMinGapMs, start to start, has passed)');
    s.sweeper.stop();
  });

  it('adaptive cadence: at once after a full sweep when capacity is free; else at the next entry’s due time + margin; the design’s fixed cadence one option away', () => {
    const s = setup();
    assert.equal(s.sweeper.nextDelayMs({ read: 2048, offered: 256, planned: 256, full: true }), s.config.sweepMinGapMs);
    s.setBacklog(1_000);
    assert.equal(
      s.sweeper.nextDelayMs({ read: 2048, offered: 256, planned: 256, full: true }),
      s.config.alarmSweepMs,
      'no capacity: no hurry',
    );
    s.setBacklog(0);
    const dueMs = NOW - 12_000;
    const delayMs = s.sweeper.nextDelayMs({ read: 0, offered: 0, planned: 0, full: false, nextDueMs: dueMs });
    assert.equal(delayMs, 3_000, 'margin 15 s: readable 3 s from now');
    const key = entryKey({ address: parseAddress('t/C/x'), dueMs, tag: { generation: 1, nonce: 'ab' } });
    const readableAt = (t: number) => compareKeys(key, dueBound('t', t - s.config.marginMs)) < 0;
    assert.deepEqual(
      [readableAt(NOW + delayMs - 1), readableAt(NOW + delayMs)],
      [false, true],
      'the sweep after that delay is the first that reads it',
    );
    assert.equal(s.sweeper.nextDelayMs({ read: 0, offered: 0, planned: 0, full: false }), s.config.alarmSweepMs);
    const fixed = setup({ sweepAdaptive: false });
    assert.equal(
      fixed.sweeper.nextDelayMs({ read: 2048, offered: 256, planned: 256, full: true, nextDueMs: NOW }),
      fixed.config.alarmSweepMs,
    );
  });
});

describe('tenant discovery', () => {
  it('a failed listing of the index’s tenants is logged, and the next sweep tries again', async () => {
    const { log, lines } = capturedLogger();
    let calls = 0;
    const tenants = async () => {
      calls++;
      if (calls === 1) throw new StoreUnavailable('listing alarms/ failed');
      return [] as string[];
    };
    const s = setup({ alarmSweepMs: 1_000 }, ['C'], [], { log, tenantsToSweep: tenants });
    s.sweeper.start();
    await s.clock.advance(1_000);
    s.sweeper.stop();
    assert.ok(calls >= 2, 'discovery ran again');
    const line = lines.find((l) => l.msg.startsWith('listing the index’s tenants failed'));
    assert.equal(line?.err?.code, ErrorCode.StoreUnavailable);
  });
});

describe('the cursor’s invariant: it never moves past an own entry the delivery cap left out', () => {
  it('a listing out of byte order stops the sweep with INTERNAL before it offers or moves anything (wrong input), logged as an error', async () => {
    const { log, lines } = capturedLogger();
    const s = setup({ deliveriesPerSweep: 2, anyonesDeliveriesPerSweep: 0 }, ['C'], [], { log });
    for (let i = 0; i < 4; i++) await s.add(`a${i}`, 20_000 - i);
    const list = s.store.list.bind(s.store);
    // Breaks the store's contract (keys in byte order): a3 a2 a1 a0, so the plan takes a3 and a2,
    // leaves a1 behind, and a1's cursor ("the key read before it") is a2's, past it.
    s.store.list = async (o) => {
      const page = await list(o);
      return { ...page, keys: [...page.keys].reverse() };
    };
    await assert.rejects(
      s.sweeper.sweepTenant('t'),
      (e: unknown) =>
        isKeepworkError(e, ErrorCode.Internal) && /would move its cursor to .*, past .*, an own entry it did not offer/.test(e.message),
    );
    assert.equal(s.offered.length, 0, 'nothing offered from that plan');

    s.sweeper.start(); // the schedule's sweep: the same failure is logged as an error
    await s.clock.advance(0);
    s.sweeper.stop();
    const line = lines.find((l) => l.msg === 'sweep stopped: an invariant failed');
    assert.match(line?.err?.message ?? '', /an own entry it did not offer/);
    assert.equal(line?.level, 50);

    s.store.list = list;
    await s.sweeper.sweepTenant('t');
    assert.deepEqual(
      s.offered.map((o) => o.address.name),
      ['a0', 'a1'],
      'the cursor did not move: the next sweep reads from the start',
    );
  });
});

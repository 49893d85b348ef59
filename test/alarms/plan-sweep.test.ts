import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatAddress, parseAddress } from '../../src/core/address.js';
import { SeededRandom } from '../../src/core/random.js';
import type { IndexEntry } from '../../src/alarms/keys.js';
import { EntrySorter, checkPlan, planSorted, planSweep, type SweepNode } from '../../src/alarms/plan-sweep.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { shardOwner } from '../../src/alarms/shard.js';

const node = (nodeId: string, classes = ['C'], tenants: string[] | null = null): SweepNode => ({ nodeId, classes, tenants });
const NOW = 10_000_000;
const MARGIN = 15_000;
const entry = (name: string, overdueMs: number, className = 'C'): IndexEntry => ({
  address: parseAddress({ tenant: 't', className, name }),
  dueMs: NOW - overdueMs,
  tag: { generation: 1, nonce: 'a' },
});

describe('sharding (rendezvous)', () => {
  it('every node computes the same owner; removing a node moves only its entries', () => {
    const ids = ['n1', 'n2', 'n3'];
    const keys = Array.from({ length: 3000 }, (_, i) => `t/C/${i}`);
    const before = keys.map((k) => shardOwner(k, ids));
    const counts = ids.map((id) => before.filter((o) => o === id).length);
    for (const c of counts) assert.ok(c > 800 && c < 1200, `balanced: ${counts}`);
    const after = keys.map((k) => shardOwner(k, ['n1', 'n3']));
    keys.forEach((_, i) => {
      if (before[i] !== 'n2') assert.equal(after[i], before[i]);
    });
    assert.equal(shardOwner('t/C/x', []), undefined);
  });
});

describe('planSweep', () => {
  const arb = fc.record({
    entries: fc.array(fc.tuple(fc.integer({ min: 0, max: 99 }), fc.integer({ min: MARGIN, max: 6 * MARGIN }), fc.constantFrom('C', 'D')), {
      maxLength: 300,
    }),
    nodes: fc.integer({ min: 1, max: 4 }),
    cap: fc.integer({ min: 1, max: 64 }),
    reserve: fc.integer({ min: 0, max: 16 }),
    busy: fc.array(fc.integer({ min: 0, max: 99 }), { maxLength: 20 }),
    seed: fc.integer({ min: 0, max: 1_000_000 }),
  });

  it('never over the cap; one delivery per actor; never a busy actor or a class not served; own first; the reserve kept for anyone’s', () => {
    fc.assert(
      fc.property(arb, (g) => {
        const live = Array.from({ length: g.nodes }, (_, i) => node(`n${i}`));
        const self = live[0]!;
        const entries = g.entries.map(([n, overdue, cls]) => entry(`a${n}`, overdue, cls));
        const busy = new Set(g.busy.map((n) => `t/C/a${n}`));
        const reserve = Math.min(g.reserve, g.cap);
        const plan = planSweep({
          entries,
          live,
          self,
          busy,
          nowMs: NOW,
          marginMs: MARGIN,
          anyonesAfterMargins: 3,
          cap: g.cap,
          anyonesReserve: reserve,
          random: new SeededRandom(g.seed),
        });
        const keys = plan.deliveries.map((e) => formatAddress(e.address));
        assert.ok(plan.deliveries.length <= g.cap);
        assert.equal(new Set(keys).size, keys.length);
        for (const k of keys) assert.ok(!busy.has(k) && k.startsWith('t/C/'));
        const ownKeys = new Set(
          entries
            .filter(
              (e) =>
                e.address.className === 'C' &&
                !busy.has(formatAddress(e.address)) &&
                shardOwner(
                  formatAddress(e.address),
                  live.map((n) => n.nodeId),
                ) === 'n0',
            )
            .map((e) => formatAddress(e.address)),
        );
        const first = keys.slice(0, plan.own);
        for (const k of first) assert.ok(ownKeys.has(k), 'own entries come first');
        const anyonesAvailable = new Set(
          entries
            .filter(
              (e) =>
                e.address.className === 'C' &&
                !busy.has(formatAddress(e.address)) &&
                !ownKeys.has(formatAddress(e.address)) &&
                e.dueMs <= NOW - 3 * MARGIN,
            )
            .map((e) => formatAddress(e.address)),
        ).size;
        assert.ok(plan.anyones >= Math.min(reserve, anyonesAvailable, g.cap), `reserve kept: ${plan.anyones} of ${anyonesAvailable}`);
        assert.equal(plan.own, Math.min(ownKeys.size, g.cap - Math.min(reserve, anyonesAvailable)));
        const left = plan.ownLeftBehind.map((e) => formatAddress(e.address));
        assert.deepEqual(new Set([...first, ...left]), ownKeys, 'every own actor is delivered or reported left behind');
        assert.equal(plan.anyones + plan.anyonesLeftBehind, anyonesAvailable);
      }),
      { numRuns: 300 },
    );
  });

  it('an entry overdue three margins is anyone’s; less overdue, only its shard’s', () => {
    const live = [node('n0'), node('n1')];
    const notMine = Array.from({ length: 50 }, (_, i) => `x${i}`).find((n) => shardOwner(`t/C/${n}`, ['n0', 'n1']) === 'n1')!;
    const base = {
      live,
      self: live[0]!,
      busy: new Set<string>(),
      nowMs: NOW,
      marginMs: MARGIN,
      anyonesAfterMargins: 3,
      cap: 10,
      anyonesReserve: 2,
      random: new SeededRandom(1),
    };
    assert.equal(planSweep({ ...base, entries: [entry(notMine, 2 * MARGIN)] }).deliveries.length, 0);
    assert.equal(planSweep({ ...base, entries: [entry(notMine, 3 * MARGIN)] }).anyones, 1);
  });

  it('a node that serves no class of an entry skips it, even its own shard and even when it is anyone’s', () => {
    const live = [node('n0', ['Other'])];
    const plan = planSweep({
      entries: [entry('a', 10 * MARGIN)],
      live,
      self: live[0]!,
      busy: new Set(),
      nowMs: NOW,
      marginMs: MARGIN,
      anyonesAfterMargins: 3,
      cap: 10,
      anyonesReserve: 2,
      random: new SeededRandom(1),
    });
    assert.deepEqual([plan.deliveries.length, plan.skipped], [0, 1]);
  });

  it('a class some live nodes do not serve is sharded among those that do: none of its entries waits three margins', () => {
    const live = [node('n0', ['C']), node('n1', ['Other']), node('n2', ['C', 'Other'])];
    const entries = Array.from({ length: 60 }, (_, i) => entry(`c${i}`, MARGIN));
    const base = {
      entries,
      live,
      busy: new Set<string>(),
      nowMs: NOW,
      marginMs: MARGIN,
      anyonesAfterMargins: 3,
      cap: 100,
      anyonesReserve: 0,
      random: new SeededRandom(1),
    };
    const byNode = live.map((self) => planSweep({ ...base, self }).deliveries.map((e) => e.address.name));
    assert.equal(byNode[1]!.length, 0, 'n1 serves no C');
    assert.ok(byNode[0]!.length > 0 && byNode[2]!.length > 0, `both servers of C get a shard: ${byNode[0]!.length} / ${byNode[2]!.length}`);
    assert.equal(byNode[0]!.length + byNode[2]!.length, entries.length, 'every entry has an owner among the servers of its class');
    assert.equal(new Set([...byNode[0]!, ...byNode[2]!]).size, entries.length, 'and only one');
  });

  it('anyone’s entries are taken from a random rotation, so two surviving nodes start at different places', () => {
    const live = [node('n0'), node('n1')];
    const entries = Array.from({ length: 200 }, (_, i) => entry(`z${i}`, 4 * MARGIN)).filter(
      (e) => shardOwner(formatAddress(e.address), ['n0', 'n1']) === 'n1',
    );
    const pick = (seed: number) =>
      planSweep({
        entries,
        live,
        self: live[0]!,
        busy: new Set(),
        nowMs: NOW,
        marginMs: MARGIN,
        anyonesAfterMargins: 3,
        cap: 8,
        anyonesReserve: 8,
        random: new SeededRandom(seed),
      }).deliveries.map((e) => e.address.name);
    const a = pick(1);
    const b = pick(2);
    assert.equal(a.length, 8);
    assert.notDeepEqual(a, b);
  });
});

describe('the plan’s invariant (INTERNAL on a planted wrong plan)', () => {
  const internal = (e: unknown) => isKeepworkError(e, ErrorCode.Internal);
  it('a plan over its cap stops there', () => {
    assert.throws(() => checkPlan([entry('a', MARGIN), entry('b', MARGIN), entry('c', MARGIN)], 2), internal);
    checkPlan([entry('a', MARGIN), entry('b', MARGIN)], 2);
  });
  it('two deliveries to one actor stop there', () => {
    assert.throws(() => checkPlan([entry('a', MARGIN), entry('a', 2 * MARGIN)], 5), internal);
  });
});

describe('EntrySorter: where a sweep may stop reading', () => {
  const arb = fc.record({
    entries: fc.array(fc.tuple(fc.integer({ min: 0, max: 199 }), fc.integer({ min: MARGIN, max: 6 * MARGIN })), {
      minLength: 100,
      maxLength: 400,
    }),
    nodes: fc.integer({ min: 1, max: 3 }),
    cap: fc.integer({ min: 1, max: 24 }),
    reserve: fc.integer({ min: 0, max: 12 }),
    seed: fc.integer({ min: 0, max: 1_000_000 }),
  });

  it('stopped where `fills` says, the plan is full and takes the earliest own entries a plan of every entry takes', () => {
    let stops = 0;
    fc.assert(
      fc.property(arb, (g) => {
        const live = Array.from({ length: g.nodes }, (_, i) => node(`n${i}`));
        const input = { live, self: live[0]!, busy: new Set<string>(), nowMs: NOW, marginMs: MARGIN, anyonesAfterMargins: 3 };
        const reserve = Math.min(g.reserve, g.cap);
        const entries = g.entries.map(([n, overdue]) => entry(`a${n}`, overdue)).sort((a, b) => a.dueMs - b.dueMs);
        const read = new EntrySorter(input);
        const stopAt = entries.findIndex((e) => (read.add(e), read.fills(g.cap, reserve)));
        if (stopAt < 0) return;
        stops++;
        const caps = { cap: g.cap, anyonesReserve: reserve };
        const part = planSorted(read, { ...caps, random: new SeededRandom(g.seed) });
        const whole = planSweep({ entries, ...input, ...caps, random: new SeededRandom(g.seed) });
        assert.equal(part.deliveries.length, g.cap, 'the plan of what was read is full');
        assert.equal(whole.deliveries.length, g.cap);
        assert.deepEqual(part.deliveries.slice(0, whole.own), whole.deliveries.slice(0, whole.own), 'the same earliest own entries');
        if (read.anyones.length >= reserve) assert.deepEqual([part.own, part.anyones], [whole.own, whole.anyones], 'the same split');
      }),
      { numRuns: 300 },
    );
    assert.ok(stops > 150, `${stops} of 300 cases stopped early`);
  });

  it('stops once own entries fill what the reserve leaves and anyone’s fill the reserve, not only once own entries fill the cap', () => {
    const live = [node('n0'), node('n1')];
    const read = new EntrySorter({ live, self: live[0]!, busy: new Set<string>(), nowMs: NOW, marginMs: MARGIN, anyonesAfterMargins: 3 });
    const names = Array.from({ length: 2_000 }, (_, i) => `a${i}`);
    const mine = names.filter((n) => shardOwner(`t/C/${n}`, ['n0', 'n1']) === 'n0');
    const theirs = names.filter((n) => shardOwner(`t/C/${n}`, ['n0', 'n1']) === 'n1');
    for (const n of mine.slice(0, 223)) read.add(entry(n, 4 * MARGIN));
    for (const n of theirs.slice(0, 32)) read.add(entry(n, 4 * MARGIN));
    assert.equal(read.fills(256, 32), false, '223 own + 32 anyone’s: one own entry short');
    read.add(entry(mine[223]!, 4 * MARGIN));
    assert.equal(read.fills(256, 32), true, '224 own + 32 anyone’s fill a plan of 256');
    assert.equal(read.fills(256, 33), false, 'but not with a reserve of 33');
  });
});

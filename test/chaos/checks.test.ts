/**
 * The chaos run's checks (checks.ts) on hand-made histories: each catches its breakage, and a
 * clean history passes. The plan (plan.ts) is the same for the same seed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ActorView, LogRow } from './bucket-view.js';
import {
  ALARM_BOUND_MS,
  checkAlarms,
  checkChainWriters,
  checkDeleted,
  checkDurables,
  checkLinearizable,
  checkOnce,
  type AlarmStats,
  type LinkWriter,
} from './checks.js';
import { describeWire } from './faults.js';
import { actorName, fingerprint, MARGIN_MS, planRun, RACE_ACTORS, TIMINGS, type Op } from './plan.js';
import type { Outcome } from './workload.js';

const ACTOR = actorName(0, 0);
const T = 1_000_000;

let seq = 0;
function row(kind: LogRow['kind'], op: string, at: number, more: Partial<LogRow> = {}): LogRow {
  return { seq: ++seq, kind, op, durable: 1, at, due: 0, period: 0, fail: 0, retries: 0, scheduled: 0, wall: at, ...more };
}

const view = (log: LogRow[], state: ActorView['state'] = 'restored'): ActorView => ({ actor: ACTOR, state, log });
const views = (v: ActorView) => new Map([[v.actor, v]]);

function outcome(i: number, kind: Op['kind'], durable: boolean, ackedAt?: number, sentAt = T): Outcome {
  const op: Op = { i, id: `c1-${i}`, at: 0, slot: 0, incarnation: 0, kind, durable, via: 0 };
  return { op, attempts: [], sentAt, ...(ackedAt === undefined ? {} : { ackedAt }) };
}

const noStats = (): AlarmStats => ({ runs: 0, lateness: [], quiet: [], recurringRuns: 0, retriedRuns: 0 });
const alarms = (log: LogRow[], endAt = T + 60_000) => checkAlarms(view(log), [], endAt, noStats()).map((v) => v.message);

describe('chaos checks', () => {
  it('durable: an acknowledged op missing or doubled is caught; one acknowledged after the read is not checked', () => {
    const acked = [outcome(0, 'apply', true, T + 10), outcome(1, 'apply', true, T + 20), outcome(2, 'apply', true, T + 500)];
    const v = views(view([row('apply', 'c1-1', T), row('apply', 'c1-1', T + 1)]));
    const found = checkDurables(acked, v, T + 100, T + 100).map((x) => x.message);
    assert.equal(found.length, 2);
    assert.match(found[0]!, /c1-0 .* is missing from/);
    assert.match(found[1]!, /c1-1 .* is 2 times in/);
    assert.deepEqual(checkDurables(acked, views(view([row('apply', 'c1-0', T), row('apply', 'c1-1', T)])), T + 100, T + 100), []);
  });

  it('once: an op applied twice is caught, plain or durable', () => {
    assert.equal(checkOnce(views(view([row('apply', 'p', T, { durable: 0 }), row('apply', 'p', T + 1, { durable: 0 })])), T).length, 1);
    assert.deepEqual(checkOnce(views(view([row('apply', 'a', T), row('apply', 'b', T)])), T), []);
  });

  it('deleted: a destroyed actor holding rows from before its destroy is caught; one re-created by later requests is counted', () => {
    const destroy = [outcome(5, 'destroy', true, T + 50, T + 10)];
    assert.equal(checkDeleted(destroy, views(view([row('apply', 'old', T)])), T).violations.length, 1);
    const later = checkDeleted(destroy, views(view([row('apply', 'late', T + 60)])), T);
    assert.deepEqual([later.violations.length, later.recreated], [0, 1]);
    // A row's `at` is its node's clock, maybe behind; `wall` (the machine's) decides.
    const behind = checkDeleted(destroy, views(view([row('apply', 'late', T, { wall: T + 60 })])), T);
    assert.deepEqual([behind.violations.length, behind.recreated], [0, 1]);
    assert.equal(checkDeleted(destroy, views(view([], 'deleted')), T).violations.length, 0);
  });

  it('linearizable: replies that do not match the committed log, or that break real-time order, are caught', () => {
    /** A durable op sent at `sentAt`, acknowledged at `ackedAt` with the reply `{ seq, durables }`. */
    const acked = (i: number, kind: Op['kind'], sentAt: number, ackedAt: number, result?: { seq: number; durables: number }): Outcome => {
      const o = outcome(i, kind, true, ackedAt, sentAt);
      o.attempts.push({ op: i, n: 1, node: 0, sentAt, endAt: ackedAt, status: 200, ...(result ? { result } : {}) });
      return o;
    };
    const log = (): LogRow[] => [
      { ...row('apply', 'c1-0', T), seq: 1 },
      { ...row('apply', 'p', T, { durable: 0 }), seq: 2 },
      { ...row('arm', 'c1-1', T), seq: 3 },
      { ...row('apply', 'c1-2', T), seq: 4 },
    ];
    const check = (ops: Outcome[]) => checkLinearizable(ops, views(view(log())), T).map((v) => v.message);
    // Clean: each reply names its row and the durable applies up to it; c1-1 and c1-2 overlap in time.
    const clean = [
      acked(0, 'apply', T, T + 10, { seq: 1, durables: 1 }),
      acked(1, 'arm', T + 20, T + 60, { seq: 3, durables: 1 }),
      acked(2, 'apply', T + 30, T + 50, { seq: 4, durables: 2 }),
    ];
    assert.deepEqual(check(clean), []);
    // A reply from a copy that later lost a commit: its row is elsewhere in the committed log.
    assert.match(check([acked(2, 'apply', T, T + 10, { seq: 3, durables: 2 })])[0]!, /acknowledged as row 3 .* has it at row 4/);
    // A reply counting an apply the committed log does not have before it.
    assert.match(
      check([acked(1, 'arm', T, T + 10, { seq: 3, durables: 2 })])[0]!,
      /counting 2 durable applies; the committed log has 1 up to its row 3/,
    );
    // c1-2 acknowledged before c1-1 was first sent, yet c1-1 comes first in the log.
    const reordered = [acked(2, 'apply', T, T + 10, { seq: 4, durables: 2 }), acked(1, 'arm', T + 20, T + 30, { seq: 3, durables: 1 })];
    assert.match(
      check(reordered)[0]!,
      /apply c1-2 was acknowledged at .* before arm c1-1 was first sent at .*, yet comes after it .* \(rows 4 and 3\)/,
    );
    assert.match(check([acked(0, 'apply', T, T + 10)])[0]!, /without a result/);
  });

  it('chain: two writers of one generation, or a generation going back, are caught', () => {
    const link = (seq: number, generation: number, nodeId: string, epoch = 1, kind: LinkWriter['kind'] = 'delta'): LinkWriter => ({
      seq,
      kind,
      generation,
      nodeId,
      epoch,
    });
    assert.deepEqual(checkChainWriters(ACTOR, [link(1, 1, 'n0'), link(2, 1, 'n0'), link(3, 2, 'n1'), link(4, 3, 'n0', 2)], T), []);
    assert.match(
      checkChainWriters(ACTOR, [link(1, 1, 'n0'), link(2, 1, 'n1')], T)[0]!.message,
      /link 2 of generation 1 was written by n1\/1, an earlier one by n0\/1/,
    );
    assert.match(
      checkChainWriters(ACTOR, [link(1, 1, 'n0'), link(2, 1, 'n0', 2)], T)[0]!.message,
      /written by n0\/2, an earlier one by n0\/1/,
    );
    assert.match(
      checkChainWriters(ACTOR, [link(1, 2, 'n0'), link(2, 1, 'n1')], T)[0]!.message,
      /link 2 has generation 1, below link 1's 2/,
    );
    // After a tombstone the actor made again starts a chain of its own, its generations and writers anew.
    const tombstone = [link(1, 2, 'n0'), link(2, 2, 'n0', 1, 'tombstone')];
    assert.deepEqual(checkChainWriters(ACTOR, [...tombstone, link(3, 1, 'n1', 1, 'snapshot')], T), []);
    assert.equal(checkChainWriters(ACTOR, [...tombstone, link(3, 1, 'n1', 1, 'snapshot'), link(4, 1, 'n2')], T).length, 1);
  });

  it('alarms: a clean history of a one-shot, a replaced and a recurring alarm passes', () => {
    const log = [
      row('arm', 'a1', T, { due: T + 100 }),
      row('fire', 'a1', T + 150, { due: T + 100, scheduled: T + 100 }),
      row('arm', 'a2', T + 200, { due: T + 5_000 }),
      row('arm', 'a3', T + 300, { due: T + 400, period: 1_000 }),
      row('fire', 'a3', T + 410, { due: T + 400, scheduled: T + 400, period: 1_000 }),
      row('fire', 'a3', T + 3_500, { due: T + 3_400, scheduled: T + 3_400, period: 1_000 }),
    ];
    assert.deepEqual(alarms(log, T + 4_000), []);
  });

  it('alarms: a run twice, early, of a cleared alarm, or never is caught', () => {
    const arm = row('arm', 'a', T, { due: T + 100 });
    const fire = row('fire', 'a', T + 150, { due: T + 100, scheduled: T + 100 });
    assert.match(alarms([arm, fire, { ...fire, seq: 99 }]).join(), /no alarm was armed/);
    assert.match(alarms([arm, row('fire', 'a', T + 50, { due: T + 100, scheduled: T + 50 })]).join(), /ran early/);
    // By a clock skewed ahead: on time by the node's clock, early by the machine's past the bound.
    assert.deepEqual(alarms([arm, row('fire', 'a', T + 100, { due: T + 100, scheduled: T + 100, wall: T - 99 })]), []);
    assert.match(
      alarms([arm, row('fire', 'a', T + 100, { due: T + 100, scheduled: T + 100, wall: T - 101 })]).join(),
      /201 ms before its time/,
    );
    assert.match(alarms([arm, row('clear', 'c', T + 10), fire]).join(), /no alarm was armed/);
    assert.match(alarms([arm], T + 100 + ALARM_BOUND_MS + 1).join(), /never ran/);
    assert.match(
      alarms([arm, row('arm', 'b', T + 100 + ALARM_BOUND_MS + 1, { due: T + 10 ** 9 })], T).join(),
      /had not run when b replaced it/,
    );
    const every = row('arm', 'e', T, { due: T + 100, period: 1_000 });
    const point = row('fire', 'e', T + 100, { due: T + 100, scheduled: T + 100, period: 1_000 });
    assert.match(alarms([every, point, { ...point, seq: 98 }]).join(), /a point before the armed/);
  });

  it('the same seed plans the same run; another seed another', () => {
    const shape = { seed: 42, chaosMs: 60_000, nodes: 4 };
    assert.equal(fingerprint(planRun(shape)), fingerprint(planRun(shape)));
    assert.notEqual(fingerprint(planRun(shape)), fingerprint(planRun({ ...shape, seed: 43 })));
  });

  it('draws every wire cut from a stream of its own: the same for a seed, all kinds met, the plan unchanged', () => {
    const plan = planRun({ seed: 42, chaosMs: 60_000, nodes: 4 });
    assert.deepEqual(
      plan.faults.map((_, i) => plan.wireCut(i)),
      planRun({ seed: 42, chaosMs: 60_000, nodes: 4 }).faults.map((_, i) => plan.wireCut(i)),
    );
    const seen = new Set(Array.from({ length: 200 }, (_, i) => JSON.stringify(plan.wireCut(i))));
    for (const between of ['peers', 'client'])
      for (const direction of ['both', 'in', 'out'])
        assert.ok(seen.has(JSON.stringify({ between, direction })), `${between} ${direction} never drawn`);
    // The plan of the CI's seed as it was before wire cuts were drawn (test/cluster/chaos.test.ts).
    assert.equal(fingerprint(planRun({ seed: 20240601, chaosMs: 120_000, nodes: 3 })), '71037826455904e1');
  });

  it('describes a wire cut by what it drops: a peer, the clients or the bucket, one way or both', () => {
    const peer = { at: 42_500, kind: 'peerCut' as const, node: 2, peer: 0, forMs: 3_009 };
    assert.equal(
      describeWire(peer, { between: 'peers', direction: 'both' }),
      '+42.5s n2 for 3009 ms: packets between n2 and n0 dropped on the wire, both ways',
    );
    assert.match(describeWire(peer, { between: 'client', direction: 'out' }), /n2 and the clients dropped on the wire, what n2 sends/);
    const bucket = { at: 11_000, kind: 'bucketCut' as const, node: 0, forMs: 3_291 };
    assert.match(describeWire(bucket, { between: 'client', direction: 'in' }), /n0 and the bucket dropped on the wire, what n0 receives/);
    const pauseCut = { at: 1_000, kind: 'pauseCut' as const, node: 1, pauseMs: 3_000, cutMs: 2_000 };
    assert.match(
      describeWire(pauseCut, { between: 'peers', direction: 'in' }),
      /SIGSTOP .*\(packets between n1 and the bucket dropped on the wire, both ways\)$/,
    );
  });

  it('aimed ops sit in time order among the planned ones, numbered, each on its slot incarnation at its time', () => {
    const plan = planRun({ seed: 7, chaosMs: 120_000, nodes: 3 });
    const aimed = plan.ops.filter((o) => o.aim !== undefined);
    assert.ok(
      aimed.some((o) => o.aim === 'pauseCut' && o.kind === 'read'),
      'reads through a node resumed but cut',
    );
    assert.ok(
      aimed.some((o) => o.aim === 'holdWrites' && o.kind === 'read'),
      'reads through a node whose writes are held',
    );
    plan.ops.forEach((o, i) => {
      assert.equal(o.i, i);
      assert.equal(o.id, `c7-${i}`);
      if (i > 0) assert.ok(plan.ops[i - 1]!.at <= o.at);
    });
    const incarnation = new Map<number, number>();
    for (const o of plan.ops) {
      assert.equal(o.incarnation, incarnation.get(o.slot) ?? 0, `op ${o.i}`);
      if (o.kind === 'destroy') incarnation.set(o.slot, o.incarnation + 1);
    }
  });

  it('a short hold of writes gets applies elsewhere then reads through it; a long one, alarms due past its lease and quiet', () => {
    const plan = planRun({ seed: 2, chaosMs: 120_000, nodes: 3 });
    const holds = (p: typeof plan) => p.faults.flatMap((f) => (f.kind === 'holdWrites' ? [f] : []));
    const long = holds(plan).find((f) => f.forMs >= 6_500)!;
    const short = holds(planRun({ seed: 7, chaosMs: 120_000, nodes: 3 })).find((f) => f.forMs < 6_500)!;
    assert.ok(long && short, 'seed 2 plans a long hold, seed 7 a short one');
    const within = (f: typeof long) => plan.ops.filter((o) => o.at >= f.at && o.at < f.at + f.forMs);
    const arms = within(long).filter((o) => o.aim === 'holdWrites' && o.kind === 'arm');
    assert.equal(arms.length, plan.slots - plan.relayFaults.length * RACE_ACTORS, "on every actor of the workload's");
    for (const o of arms) {
      assert.equal(o.via, long.node);
      assert.ok(o.inMs! >= TIMINGS.leasePeriodMs, 'due once the held node can no longer run it');
    }
    assert.deepEqual(
      within(long).filter((o) => o.aim === undefined),
      [],
      'no random op while the entries come due',
    );
    const seven = planRun({ seed: 7, chaosMs: 120_000, nodes: 3 });
    const aimedShort = seven.ops.filter((o) => o.at >= short.at && o.at < short.at + short.forMs && o.aim === 'holdWrites');
    const applies = aimedShort.filter((o) => o.kind === 'apply');
    const reads = aimedShort.filter((o) => o.kind === 'read');
    assert.ok(applies.length > 0 && applies.every((o) => o.durable && o.via !== short.node && o.at >= short.at + MARGIN_MS));
    assert.ok(reads.length > 0 && reads.every((o) => o.via === short.node && o.at > Math.max(...applies.map((a) => a.at))));
  });

  it('a staleListHold race gets actors of its own, taken by the held node before its hold, and a calm span', () => {
    const plan = planRun({ seed: 2, chaosMs: 120_000, nodes: 3 });
    const [race] = plan.relayFaults;
    assert.ok(race && plan.relayFaults.length === 1, 'seed 2 plans one race');
    const hold = plan.faults.find((f) => f.kind === 'holdWrites' && f.at === race.at)!;
    assert.equal(race.node, hold.node);
    assert.deepEqual(race.slots.length, RACE_ACTORS);
    assert.ok(race.slots.every((s) => s >= plan.slots - RACE_ACTORS && s < plan.slots));
    const ops = plan.ops.filter((o) => race.slots.includes(o.slot));
    assert.ok(
      ops.every((o) => o.aim === 'staleListHold' && o.via === hold.node),
      'no op of the workload reaches them',
    );
    const applies = ops.filter((o) => o.kind === 'apply');
    const arms = ops.filter((o) => o.kind === 'arm');
    assert.equal(applies.length, RACE_ACTORS);
    assert.ok(
      applies.every((o) => o.durable && o.at < hold.at - 2_000),
      'acknowledged before the hold',
    );
    assert.equal(arms.length, RACE_ACTORS);
    assert.ok(arms.every((o) => o.at > hold.at && o.inMs! >= TIMINGS.leasePeriodMs));
    assert.ok(race.calm.from < applies[0]!.at && race.calm.to > race.at + race.forMs + 10_000);
    // Seed 2 drew a peer cut until 7.3 s and a pauseCut at 20.8 s among others: dropped.
    assert.ok(
      plan.faults.every((f) => f === hold || f.at >= race.calm.to),
      'no other fault in the calm span, nor reaching into it',
    );
  });
});

/** The pure verdicts of `index check` (index-findings.ts), the status feed's rings, and Progress. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import type { IndexEntry } from '../../src/alarms/keys.js';
import type { CommittedActor } from '../../src/ops/committed-state.js';
import { EXPLAIN, actorFinding, entryFinding } from '../../src/ops/index-findings.js';
import { Progress } from '../../src/cli/progress.js';
import { DELIVERIES_MAX, Ring, StatusFeed } from '../../src/main/status-feed.js';

const address = parseAddress('t/C/n');
const T = 1_800_000_000_000;
const actor = (over: Partial<CommittedActor>): CommittedActor => ({
  address,
  state: 'restored',
  headSeq: 3,
  generation: 5,
  alarmAt: T,
  indexedRaw: `${T}/00000000000000000005-ab`,
  indexed: { at: T, tag: { generation: 5, nonce: 'ab' } },
  initialized: true,
  alarmFailures: 0,
  ownerFence: null,
  ...over,
});
const entry = (dueMs: number, generation: number | null, nonce = 'ab'): IndexEntry => ({
  address,
  dueMs,
  tag: generation === null ? null : { generation, nonce },
});

describe('index check verdicts', () => {
  it('judges an entry against the committed head', () => {
    assert.equal(entryFinding(entry(T, 5), actor({})), 'named');
    assert.equal(entryFinding(entry(T, 5, 'cd'), actor({})), 'unnamedAtAlarm');
    assert.equal(entryFinding(entry(T - 1, 5), actor({})), 'stale');
    assert.equal(entryFinding(entry(T - 1, 4), actor({ alarmAt: null, indexed: null })), 'stale');
    assert.equal(entryFinding(entry(T - 1, 6), actor({})), 'newerGeneration');
    assert.equal(entryFinding(entry(T, null), actor({ indexed: { at: T, tag: null } })), 'named');
    assert.equal(entryFinding(entry(T, null), actor({})), 'unnamedAtAlarm');
    assert.equal(entryFinding(entry(T, 1), actor({ state: 'empty' })), 'noState');
    assert.equal(entryFinding(entry(T, 1), actor({ state: 'deleted' })), 'deleted');
    assert.equal(entryFinding(entry(T, 1), actor({ state: 'corrupt' })), 'unreadable');
  });

  it('judges a committed alarm by its named entry and what else lists it', () => {
    assert.equal(actorFinding(actor({}), true, 0), 'ok');
    assert.equal(actorFinding(actor({}), false, 1), 'listedUnnamed');
    assert.equal(actorFinding(actor({}), false, 0), 'missing');
    assert.equal(actorFinding(actor({ indexed: { at: T - 5, tag: null } }), true, 0), 'missing');
    assert.equal(actorFinding(actor({ indexed: null, indexedRaw: null }), false, 0), 'unindexed');
    assert.equal(actorFinding(actor({ indexed: undefined }), false, 0), 'unreadable');
    for (const k of ['ok', 'missing', 'unindexed', 'stale', 'noState', 'newerGeneration', 'deleted', 'notAnEntry'] as const)
      assert.ok(EXPLAIN[k].length > 20);
  });
});

describe('status feed', () => {
  it('keeps the newest items of a bounded ring', () => {
    const r = new Ring<number>(3);
    for (let i = 1; i <= 5; i++) r.push(i);
    assert.deepEqual(r.toArray(), [3, 4, 5]);
  });

  it('records deliveries by outcome and counts them into the next sample', () => {
    const f = new StatusFeed();
    f.delivered('t/C/a', 1_000, { type: 'ok', alarmAt: null, deleted: false, ran: true }, 1_500);
    f.delivered('t/C/b', 1_000, { type: 'ok', alarmAt: null, deleted: false, ran: false, removed: 2 }, 1_600);
    f.delivered('t/C/c', 1_000, { type: 'error', error: { code: 'HANDLER_FAILED', message: 'boom' }, alarmAt: 2_000 }, 1_700);
    f.failed('t/C/d', 1_000, new Error('no bucket'), 1_800);
    assert.deepEqual(f.totals, { ran: 1, stale: 1, kept: 0, failed: 2 });
    assert.deepEqual(
      f.deliveries.toArray().map((d) => [d.actor, d.outcome, d.lateMs, d.error ?? d.removed ?? null]),
      [
        ['t/C/a', 'ran', 500, null],
        ['t/C/b', 'stale', 600, 2],
        ['t/C/c', 'failed', 700, 'boom'],
        ['t/C/d', 'failed', 800, 'no bucket'],
      ],
    );
    f.sample({ atMs: 2_000, backlog: 1, lagSeconds: 0, held: 1, timer: 0 });
    f.sample({ atMs: 3_000, backlog: 0, lagSeconds: 0, held: 1, timer: 0 });
    assert.deepEqual(
      f.samples.toArray().map((s) => [s.delivered, s.failed]),
      [
        [2, 2],
        [0, 0],
      ],
    );
    for (let i = 0; i < DELIVERIES_MAX + 10; i++) f.failed('x/C/y', 0, 'e', i);
    assert.equal(f.deliveries.toArray().length, DELIVERIES_MAX);
  });
});

describe('progress', () => {
  it('rewrites one line on a terminal at most every interval, and ends it', () => {
    let t = 0;
    const out: string[] = [];
    const p = new Progress({ isTTY: true, write: (s) => out.push(s) }, () => t, 250, 5_000);
    p.update('a');
    t = 300;
    p.update('b');
    t = 400;
    p.update('c');
    p.done();
    assert.deepEqual(out, ['\r\x1b[Kb', '\n']);
  });

  it('prints plain lines, rarely, elsewhere', () => {
    let t = 0;
    const out: string[] = [];
    const p = new Progress({ isTTY: false, write: (s) => out.push(s) }, () => t, 250, 5_000);
    t = 1_000;
    p.update('a');
    t = 6_000;
    p.update('b');
    p.done();
    assert.deepEqual(out, ['b\n']);
  });
});

/** The pure verdicts of `index check` (index-findings.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import type { IndexEntry } from '../../src/alarms/keys.js';
import type { CommittedActor } from '../../src/ops/committed-state.js';
import { EXPLAIN, actorFinding, entryFinding } from '../../src/ops/index-findings.js';

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

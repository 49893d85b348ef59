import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { SeededRandom } from '../../src/core/random.js';
import { listChain } from '../../src/replication/chain.js';
import { decodeLink } from '../../src/replication/link.js';
import { restorePointInTime } from '../../src/replication/point-in-time.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { parseTarget } from '../../src/cli/restore-command.js';
import { MemoryStore } from '../../src/store/memory.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';
import { tmpdir } from 'node:os';

const Log = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec('CREATE TABLE log (v TEXT)'),
  methods: {
    add: (ctx: ActorContext, v: string) => void ctx.sql.prepare('INSERT INTO log VALUES (?)').run(v),
    all: (ctx: ActorContext) => (ctx.sql.prepare('SELECT v FROM log ORDER BY rowid').all() as { v: string }[]).map((r) => r.v),
  },
});
const A = 't/Log/x';
const address = parseAddress(A);
const envs: InlineActors[] = [];
after(async () => {
  for (const e of envs) await e.cleanup();
});
const env = (store: MemoryStore, options = {}) => {
  const e = new InlineActors({ Log }, options, store);
  envs.push(e);
  return e;
};

describe('point-in-time restore', () => {
  async function pitr(store: MemoryStore, e: InlineActors, target: { seq: number } | { atMs: number }) {
    return restorePointInTime(store, address, target, {
      clock: e.clock,
      random: new SeededRandom(5),
      attemptsMax: 3,
      retryBaseMs: 1,
      writer: { nodeId: 'cli', epoch: 0, generation: 0 },
      workDir: tmpdir(),
    });
  }

  it('writes the state as of a link as the new head; the node holding the actor gives it up and restores it', async () => {
    const store = new MemoryStore();
    const live = env(store);
    for (const v of ['a', 'b', 'c']) okResult(await live.callDurable(A, 'add', v));
    const r = await pitr(store, live, { seq: 2 });
    assert.deepEqual(r.fromSeq === 2 && r.newSeq, 4);
    const head = decodeLink((await store.get(linkKey(address, 4)))!.body);
    assert.equal(head.header.kind, 'snapshot');
    assert.deepEqual(okResult(await env(store).call(A, 'all')), ['a', 'b']);
    const lost = await live.callDurable(A, 'add', 'd');
    assert.equal(lost.type === 'error' && lost.error.code, 'ACTOR_GIVEN_UP', 'its next upload meets the new head');
    assert.deepEqual(okResult(await live.call(A, 'all')), ['a', 'b']);
  });

  it('finds the newest link written at or before a time', async () => {
    const store = new MemoryStore();
    const e = env(store);
    const times: number[] = [];
    for (const v of ['a', 'b', 'c']) {
      okResult(await e.callDurable(A, 'add', v));
      times.push(e.clock.now());
      await e.clock.advance(60_000);
    }
    const r = await pitr(store, e, { atMs: times[1]! + 30_000 });
    assert.equal(r.fromSeq, 2);
    await assert.rejects(pitr(store, e, { atMs: times[0]! - 1 }), { code: 'BAD_REQUEST' });
    await assert.rejects(pitr(store, e, { seq: 99 }), { code: 'BAD_REQUEST' });
  });

  it('the CLI target is exactly one of --seq and --at, validated', () => {
    assert.deepEqual(parseTarget({ seq: 3 }), { seq: 3 });
    assert.deepEqual(parseTarget({ at: '2026-11-29T10:00:00Z' }), { atMs: Date.parse('2026-11-29T10:00:00Z') });
    for (const bad of [{}, { seq: 1, at: '2026-01-01' }, { seq: 0 }, { at: 'yesterday' }])
      assert.throws(() => parseTarget(bad), { code: 'BAD_REQUEST' });
  });
});

describe('retention', () => {
  it('deletes links before the second-newest snapshot once they are old enough; restore still works', async () => {
    const store = new MemoryStore();
    const e = env(store, { snapshotEveryLinks: 3, linkRetentionMs: 60_000 });
    for (let i = 0; i < 10; i++) okResult(await e.callDurable(A, 'add', `v${i}`));
    assert.equal((await listChain(store, address))[0], 1, 'nothing is old enough yet');
    await e.clock.advance(120_000);
    for (let i = 10; i < 14; i++) okResult(await e.callDurable(A, 'add', `v${i}`));
    const seqs = await listChain(store, address);
    assert.ok(seqs[0]! > 1, `old links deleted: ${seqs}`);
    const kinds = await Promise.all(seqs.map(async (s) => decodeLink((await store.get(linkKey(address, s)))!.body).header.kind));
    assert.equal(kinds[0], 'snapshot', 'the chain still starts at a snapshot');
    assert.deepEqual(
      okResult(await env(store).call(A, 'all')),
      Array.from({ length: 14 }, (_, i) => `v${i}`),
    );
  });
});

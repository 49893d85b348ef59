/**
 * Destroying an actor (`ctx.deleteActor()`, docs/architecture.md "Destroying an actor"): its chain
 * ends with a tombstone that nothing of the old incarnation follows, and a destroy is answered
 * "done" — now, or on a retry with the same idempotency key — only once that tombstone is in the
 * bucket.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { ErrorCode } from '../../src/core/errors.js';
import { MemoryStore, type FaultHook } from '../../src/store/memory.js';
import { listChain } from '../../src/replication/chain.js';
import { decodeLink } from '../../src/replication/link.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { inlineEnvs, okResult } from '../helpers/inline-actors.js';

const ADDRESS = 't1/Doomed/a';
const address = parseAddress(ADDRESS);

const Doomed = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec("CREATE TABLE log (what TEXT); INSERT INTO log VALUES ('init')"),
  alarm: () => {
    throw new Error('alarm failed');
  },
  methods: {
    note: (ctx: ActorContext, what: string) => void ctx.sql.prepare('INSERT INTO log VALUES (?)').run(what),
    log: (ctx: ActorContext) => (ctx.sql.prepare('SELECT what FROM log').all() as { what: string }[]).map((r) => r.what),
    arm: (ctx: ActorContext, at: number) => ctx.setAlarm(at),
    destroy(ctx: ActorContext) {
      ctx.deleteActor();
      return 'gone';
    },
  },
});

// storeAttemptsMax 1: a refused PUT is the store's last answer (no backoff on the virtual clock).
const envOf = inlineEnvs({ Doomed }, { storeAttemptsMax: 1 });
const inMemoryEnvOf = inlineEnvs({ Doomed }, { newActorsInMemory: true });

/** The kinds of the actor's links, in order. */
async function chainKinds(store: MemoryStore): Promise<string[]> {
  const kinds: string[] = [];
  for (const seq of await listChain(store, address)) {
    const obj = await store.get(linkKey(address, seq));
    kinds.push(decodeLink(obj!.body, seq).header.kind);
  }
  return kinds;
}

/** A fault hook acting on one link's PUT; `seq` is set by the test once it knows it. */
function onLink(fault: (seq: number) => ReturnType<FaultHook>): { hook: FaultHook; seq: number } {
  const target = { seq: 0, hook: undefined as unknown as FaultHook };
  target.hook = (req) => (req.op === 'put' && target.seq > 0 && req.key === linkKey(address, target.seq) ? fault(target.seq) : undefined);
  return target;
}

describe('destroy: the tombstone ends the chain', () => {
  it('an upload scheduled before the destroy does not follow its tombstone (no snapshot of the old state after it)', async () => {
    const clock = new SimClock(1_800_000_000_000);
    const slowTombstone = onLink(() => ({ delayMs: 100 }));
    const store = new MemoryStore({ clock, faults: (r) => slowTombstone.hook(r) });
    const env = envOf(store, 1, { clock });
    okResult(await env.callDurable(ADDRESS, 'note', 'before'));
    okResult(await env.callDurable(ADDRESS, 'arm', clock.now()));
    // The alarm fails: its committed retry schedules a group-commit upload replicationDelayMs on.
    const failed = await env.alarm(ADDRESS);
    assert.equal(failed.type, 'error');
    const head = (await listChain(store, address)).at(-1)!;
    // The destroy's first sync uploads the retry's commit (head + 1); its tombstone (head + 2) is
    // slow, and the scheduled upload comes due while it is in flight.
    slowTombstone.seq = head + 2;
    const destroyed = env.call(ADDRESS, 'destroy');
    await clock.advance(1_000);
    const r = await destroyed;
    assert.equal(r.type === 'ok' && r.deleted, true);
    await clock.advance(1_000);
    const kinds = await chainKinds(store);
    assert.equal(kinds.at(-1), 'tombstone', `the chain ends ${kinds.slice(-3).join(', ')}`);
    assert.equal(kinds.length, head + 2);
    // A later call starts a fresh actor.
    assert.deepEqual(okResult(await env.call(ADDRESS, 'log')), ['init']);
  });

  it('the alarm’s retry after a destroy finds the actor deleted and changes nothing', async () => {
    const store = new MemoryStore();
    const env = envOf(store, 1);
    okResult(await env.callDurable(ADDRESS, 'arm', env.clock.now()));
    assert.equal((await env.alarm(ADDRESS)).type, 'error');
    okResult(await env.call(ADDRESS, 'destroy'));
    const kinds = await chainKinds(store);
    await env.clock.advance(60_000);
    assert.deepEqual(await env.alarm(ADDRESS), { type: 'ok', alarmAt: null, deleted: false, ran: false });
    assert.deepEqual(await chainKinds(store), kinds);
    assert.equal(kinds.at(-1), 'tombstone');
  });
});

describe('destroy: a new actor destroyed by its first call', () => {
  for (const [where, make] of [
    ['in a local file', envOf],
    ['in memory (newActorsInMemory)', inMemoryEnvOf],
  ] as const)
    it(`${where}: its chain ends with a tombstone, and the next call starts afresh`, async () => {
      const store = new MemoryStore();
      const env = make(store, 1);
      const r = await env.callOnce('destroy-new', ADDRESS, 'destroy');
      assert.equal(r.type === 'ok' && r.deleted, true);
      const kinds = await chainKinds(store);
      assert.equal(kinds.at(-1), 'tombstone');
      assert.deepEqual(okResult(await env.callDurable(ADDRESS, 'log')), ['init']);
      assert.deepEqual(await chainKinds(store), [...kinds, 'snapshot']);
    });
});

describe('destroy: acknowledged only once the tombstone is in the bucket', () => {
  it('a retry with the same key after the tombstone was refused destroys the actor (another node)', async () => {
    const store = new MemoryStore();
    const refusedTombstone = onLink(() => ({ fail: true }));
    store.setFaults((req) => refusedTombstone.hook(req));
    const first = envOf(store, 1);
    okResult(await first.callDurable(ADDRESS, 'note', 'kept'));
    okResult(await first.call(ADDRESS, 'note', 'plain')); // a commit the destroy's first sync uploads (head + 1)
    refusedTombstone.seq = (await listChain(store, address)).at(-1)! + 2;
    const r1 = await first.callOnce('destroy-1', ADDRESS, 'destroy');
    assert.equal(r1.type === 'error' && r1.error.code, ErrorCode.StoreUnavailable);
    refusedTombstone.seq = 0;

    // The first node lost the actor; another takes it from the bucket and gets the retry.
    const second = envOf(store, 2, { clock: first.clock });
    const r2 = await second.callOnce('destroy-1', ADDRESS, 'destroy');
    assert.equal(r2.type === 'ok' && r2.deleted, true, `the retry was answered ${JSON.stringify(r2)}`);
    assert.equal(okResult(r2), 'gone');
    assert.equal((await chainKinds(store)).at(-1), 'tombstone');
    assert.deepEqual(okResult(await second.call(ADDRESS, 'log')), ['init']);
  });

  it('a retry with the same key after the tombstone was refused destroys the actor (the same node)', async () => {
    const store = new MemoryStore();
    const refusedTombstone = onLink(() => ({ fail: true }));
    store.setFaults((req) => refusedTombstone.hook(req));
    const env = envOf(store, 1);
    okResult(await env.callDurable(ADDRESS, 'note', 'kept'));
    okResult(await env.call(ADDRESS, 'note', 'plain'));
    refusedTombstone.seq = (await listChain(store, address)).at(-1)! + 2;
    assert.equal((await env.callOnce('destroy-2', ADDRESS, 'destroy')).type, 'error');
    refusedTombstone.seq = 0;
    const r = await env.callOnce('destroy-2', ADDRESS, 'destroy');
    assert.equal(r.type === 'ok' && r.deleted, true, `the retry was answered ${JSON.stringify(r)}`);
    assert.equal((await chainKinds(store)).at(-1), 'tombstone');
    assert.deepEqual(okResult(await env.call(ADDRESS, 'log')), ['init']);
  });

  it('the alarm’s index entry stays while the tombstone is refused and goes once it is in the bucket', async () => {
    const store = new MemoryStore();
    const refusedTombstone = onLink(() => ({ fail: true }));
    store.setFaults((req) => refusedTombstone.hook(req));
    const env = envOf(store, 1);
    okResult(await env.callDurable(ADDRESS, 'arm', env.clock.now() + 3_600_000));
    const entries = () => store.keys().filter((k) => k.startsWith('alarms/'));
    assert.equal(entries().length, 1);
    refusedTombstone.seq = (await listChain(store, address)).at(-1)! + 1;
    const r1 = await env.callOnce('destroy-4', ADDRESS, 'destroy');
    assert.equal(r1.type === 'error' && r1.alarmAt, env.clock.now() + 3_600_000, 'the alarm stands');
    assert.equal(entries().length, 1);
    refusedTombstone.seq = 0;
    okResult(await env.callOnce('destroy-4', ADDRESS, 'destroy'));
    await env.clock.advance(1_000);
    assert.deepEqual(entries(), []);
  });

  it('a destroy whose upload landed after the lease ran out is not acknowledged, and its retry destroys the actor', async () => {
    const store = new MemoryStore();
    const first = envOf(store, 1);
    okResult(await first.callDurable(ADDRESS, 'note', 'kept'));
    okResult(await first.call(ADDRESS, 'note', 'plain')); // a commit the destroy's first sync uploads
    const head = (await listChain(store, address)).at(-1)!;
    store.setFaults((req) => {
      if (req.op === 'put' && req.key === linkKey(address, head + 1)) first.leaseValid = false; // lost while in flight
      return undefined;
    });
    const r1 = await first.callOnce('destroy-3', ADDRESS, 'destroy');
    assert.equal(r1.type === 'error' && r1.error.code, ErrorCode.LeaseLost);
    store.setFaults(undefined);
    const second = envOf(store, 2, { clock: first.clock });
    const r2 = await second.callOnce('destroy-3', ADDRESS, 'destroy');
    assert.equal(r2.type === 'ok' && r2.deleted, true, `the retry was answered ${JSON.stringify(r2)}`);
    assert.equal((await chainKinds(store)).at(-1), 'tombstone');
  });
});

/**
 * The alarm index's part of an actor's uploads (src/replication/index-upload.ts), through the real
 * event pipeline on a memory bucket: the rules it asserts (a broken one stops the actor with
 * INTERNAL before anything deletes or names the wrong entry), and that no rule fires on the way
 * the pipeline uses it.
 */
import assert from 'node:assert/strict';
import { after, afterEach, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { invariantHooks } from '../../src/core/invariant.js';
import { entryKey, formatIndexed, parseEntryKey } from '../../src/alarms/keys.js';
import { listChain } from '../../src/replication/chain.js';
import { MemoryStore } from '../../src/store/memory.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const Rem = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec('CREATE TABLE t (v INTEGER)'),
  alarm: () => undefined,
  methods: {
    set: (ctx: ActorContext, at: number) => ctx.setAlarm(at),
    clear: (ctx: ActorContext) => ctx.clearAlarm(),
    touch: (ctx: ActorContext) => void ctx.sql.prepare('INSERT INTO t VALUES (1)').run(),
  },
});

const A = 't/Rem/a';
const address = parseAddress(A);
const AT = 1_900_000_000_000;
const envs: InlineActors[] = [];
after(async () => {
  for (const e of envs) await e.cleanup();
});
afterEach(() => (invariantHooks.onFailure = undefined));

function env(store: MemoryStore, generation: number): InlineActors {
  const e = new InlineActors({ Rem }, { replicationDelayMs: 20 }, store);
  e.generation = generation;
  envs.push(e);
  return e;
}

/** Every failed invariant's message, as it is raised. */
function heardInvariants(): string[] {
  const heard: string[] = [];
  invariantHooks.onFailure = (err) => heard.push(err.message);
  return heard;
}

const entries = (store: MemoryStore) => store.keys().filter((k) => k.startsWith('alarms/'));
const isInternal = (pattern: RegExp) => (e: unknown) => isKeepworkError(e, ErrorCode.Internal) && pattern.test(e.message);

describe('R3 at the delete: an owner never deletes an entry of a generation above its own', () => {
  it('an entry of a newer owner handed to the delete stops the actor with INTERNAL, and stays (wrong input)', async () => {
    const store = new MemoryStore();
    const e = env(store, 3);
    okResult(await e.callDurable(A, 'set', AT));
    const newer = entryKey({ address, dueMs: AT + 1, tag: { generation: 4, nonce: 'ff' } });
    await store.put(newer, new Uint8Array(0)); // listed by the owner of generation 4
    const heard = heardInvariants();
    const slot = (await e.deps.slots.acquire(address, false, e.generation))!;

    assert.throws(
      () => slot.replica.index.deleteAfterUpload({ key: newer, generation: 4 }),
      isInternal(/generation 4, above its own 3 \(R3\)/),
    );
    e.deps.slots.release(slot);
    assert.match(heard[0] ?? '', /t\/Rem\/a would delete index entry .* of generation 4, above its own 3 \(R3\)/);
    assert.equal((slot.replica.givenUp as { code?: string } | undefined)?.code, ErrorCode.Internal, 'the actor is given up');
    okResult(await e.callDurable(A, 'touch')); // taken again (restored), uploaded
    assert.ok(store.peek(newer), 'the newer owner’s entry is still there');
  });

  it('an entry of its own generation, one below and a legacy one are deleted once the next link is up', async () => {
    const store = new MemoryStore();
    const e = env(store, 3);
    okResult(await e.callDurable(A, 'set', AT));
    const heard = heardInvariants();
    const own = entries(store);
    const older = entryKey({ address, dueMs: AT + 1, tag: { generation: 2, nonce: 'ee' } });
    const legacy = entryKey({ address, dueMs: AT + 2, tag: null });
    for (const k of [older, legacy]) await store.put(k, new Uint8Array(0));
    const slot = (await e.deps.slots.acquire(address, false, e.generation))!;
    slot.replica.index.deleteAfterUpload({ key: older, generation: 2 });
    slot.replica.index.deleteAfterUpload({ key: legacy, generation: null });
    e.deps.slots.release(slot);
    okResult(await e.callDurable(A, 'touch'));
    assert.deepEqual(entries(store), own, 'both deleted after the link; the entry the state names stays');
    assert.equal(parseEntryKey(own[0]!)?.tag?.generation, 3);
    assert.deepEqual(heard, []);
  });
});

describe('R1, R4 at the upload: a link names only an entry listed before it', () => {
  it('state naming an entry this owner never listed stops the actor before its link goes up (planted)', async () => {
    const store = new MemoryStore();
    const e = env(store, 3);
    okResult(await e.callDurable(A, 'set', AT));
    const chain = await listChain(store, address);
    const heard = heardInvariants();
    const slot = (await e.deps.slots.acquire(address, false, e.generation))!;
    const unlisted = formatIndexed({ at: AT + 5, tag: { generation: 3, nonce: 'abcd' } });
    // The wrong state: alarm_indexed names an entry no PUT listed (committed outside the pipeline).
    slot.db.prepare("UPDATE _keep_meta SET value = ? WHERE key = 'alarm_indexed'").run(unlisted);

    await assert.rejects(slot.replica.sync(), isInternal(/never listed \(R1, R4\)/));
    e.deps.slots.release(slot);
    assert.match(heard[0] ?? '', new RegExp(`t/Rem/a would upload state naming index entry ${unlisted}, which this owner never listed`));
    assert.equal((slot.replica.givenUp as { code?: string } | undefined)?.code, ErrorCode.Internal, 'the actor is given up');
    assert.deepEqual(await listChain(store, address), chain, 'no link names it');
  });

  it('entries listed by this owner, by an earlier owner, and none: every upload goes up, no invariant heard', async () => {
    const store = new MemoryStore();
    const first = env(store, 1);
    okResult(await first.callDurable(A, 'set', AT));
    await first.deps.slots.closeAll();
    const heard = heardInvariants();
    const e = env(store, 2); // takes the actor naming generation 1's entry
    okResult(await e.callDurable(A, 'touch')); // names the earlier owner's entry (an unchanged alarm keeps it)
    okResult(await e.call(A, 'set', AT + 1)); // plain: uploaded by the group commit
    okResult(await e.call(A, 'set', AT + 2)); // two listings before one upload
    await e.clock.advance(25);
    okResult(await e.callDurable(A, 'clear'));
    okResult(await e.callDurable(A, 'set', AT + 3));
    assert.deepEqual(heard, []);
    assert.deepEqual(
      entries(store).map((k) => parseEntryKey(k)?.tag?.generation),
      [2],
    );
  });
});

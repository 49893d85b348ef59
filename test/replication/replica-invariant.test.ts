/**
 * The replica's invariant: an upload's seq is the head + 1. Uploads of one actor run
 * one at a time, so nothing may move the head while a link is in flight; a planted move stops the
 * actor there (given up with INTERNAL) instead of extending the chain from a head it never had.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { ErrorCode } from '../../src/core/errors.js';
import { invariantHooks } from '../../src/core/invariant.js';
import { listChain } from '../../src/replication/chain.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { PutCondition } from '../../src/store/types.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const Notes = defineActor({
  init: (ctx: ActorContext) => void ctx.sql.exec('CREATE TABLE notes (text TEXT)'),
  methods: { add: (ctx: ActorContext, text: string) => ctx.sql.prepare('INSERT INTO notes VALUES (?)').run(text).changes },
});

/** A bucket that runs `onLinkPut` once a link PUT has landed, before its caller hears back. */
class PlantingStore extends MemoryStore {
  onLinkPut: (() => void) | undefined;
  override async put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    const r = await super.put(key, body, condition);
    if (key.startsWith('state/')) this.onLinkPut?.();
    return r;
  }
}

describe('an upload’s seq is the head + 1', () => {
  const store = new PlantingStore();
  const e = new InlineActors({ Notes }, {}, store);
  after(() => {
    invariantHooks.onFailure = undefined;
    return e.cleanup();
  });

  it('a head moved while a link was in flight stops the actor with INTERNAL (planted)', async () => {
    const A = parseAddress('t/Notes/a');
    okResult(await e.callDurable('t/Notes/a', 'add', 'one')); // link 1
    const slot = (await e.deps.slots.acquire(A, false, e.generation))!;
    e.deps.slots.release(slot);
    const replica = slot.replica as unknown as { pos: { head: { seq: number; etag: string } | null }; givenUp: Error | undefined };
    store.onLinkPut = () => (replica.pos.head = { seq: 5, etag: 'planted' }); // the wrong state
    const heard: string[] = [];
    invariantHooks.onFailure = (err) => heard.push(err.message);

    const r = await e.callDurable('t/Notes/a', 'add', 'two'); // link 2 lands on a head that now says 5
    assert.equal(r.type === 'error' && r.error.code, ErrorCode.Internal);
    assert.match(heard[0] ?? '', /link 2 of t\/Notes\/a landed on head 5, not 1/);
    assert.equal((replica.givenUp as { code?: string } | undefined)?.code, ErrorCode.Internal, 'the actor is given up');
  });
});

/**
 * A link's generation is its hold's: the replica of one hold never uploads for an event of
 * another (ActorSlots.acquire takes a replica of another hold anew). A planted use under another
 * hold stops the actor at its next upload, before the PUT.
 */
describe('a link’s generation is its hold’s', () => {
  const store = new MemoryStore();
  const e = new InlineActors({ Notes }, { replicationDelayMs: 20 }, store);
  e.generation = 2;
  after(() => {
    invariantHooks.onFailure = undefined;
    return e.cleanup();
  });

  it('a replica used under another hold stops with INTERNAL before its link goes up (planted)', async () => {
    const A = parseAddress('t/Notes/b');
    okResult(await e.callDurable('t/Notes/b', 'add', 'one')); // link 1, generation 2
    okResult(await e.call('t/Notes/b', 'add', 'two')); // plain: its link waits for the group commit
    const slot = (await e.deps.slots.acquire(A, false, e.generation))!;
    slot.replica.usedUnder(3); // the wrong state: an event of hold 3 on the replica of hold 2
    e.deps.slots.release(slot);
    const heard: string[] = [];
    invariantHooks.onFailure = (err) => heard.push(err.message);

    await e.clock.advance(25); // the group commit's upload
    await slot.replica.sync().catch(() => undefined);
    assert.match(heard[0] ?? '', /link 2 of t\/Notes\/b carries generation 2, not its hold's 3/);
    assert.equal((slot.replica.givenUp as { code?: string } | undefined)?.code, ErrorCode.Internal, 'the actor is given up');
    assert.deepEqual(await listChain(store, A), [1], 'link 2 never went up');
  });
});

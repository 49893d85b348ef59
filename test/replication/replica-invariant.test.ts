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

/**
 * A failed invariant in a worker (src/core/invariant.ts, INTERNAL) is a bug, never an outcome to
 * answer and go on from: whatever raised it — the event pipeline, an upload inside the event, a
 * group-commit upload on its timer — the actor is given up, with an error log carrying the
 * invariant's message, dropped and restored by its next call. The node's other actors go on.
 */
import assert from 'node:assert/strict';
import { after, afterEach, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { ErrorCode } from '../../src/core/errors.js';
import { invariantFailure, invariantHooks } from '../../src/core/invariant.js';
import { listChain } from '../../src/replication/chain.js';
import { MemoryStore } from '../../src/store/memory.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const Notes = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec('CREATE TABLE notes (text TEXT)'),
  methods: {
    add: (ctx: ActorContext, text: string) => ctx.sql.prepare('INSERT INTO notes VALUES (?)').run(text).changes,
    count: (ctx: ActorContext) => (ctx.sql.prepare('SELECT count(*) AS n FROM notes').get() as { n: number }).n,
    /** Test seam: an invariant of keepwork's own code failing inside the event, as a planted bug. */
    broken: () => {
      throw invariantFailure('planted: a state keepwork must never reach');
    },
  },
});

const GIVEN_UP = 'actor given up: an invariant failed';

describe('a failed invariant gives its actor up, loudly', () => {
  const { log, lines } = capturedLogger();
  const store = new MemoryStore();
  const e = new InlineActors({ Notes }, { replicationDelayMs: 20 }, store, undefined, undefined, log);
  after(() => e.cleanup());
  afterEach(() => (invariantHooks.onFailure = undefined));
  const givenUpLines = () => lines.filter((l) => l.msg === GIVEN_UP);

  it('raised inside an event: INTERNAL to the caller, an error log with its message, the actor dropped and restored next time', async () => {
    okResult(await e.callDurable('t/Notes/a', 'add', 'kept'));
    okResult(await e.callDurable('t/Notes/b', 'add', 'other'));
    const r = await e.call('t/Notes/a', 'broken');
    assert.equal(r.type === 'error' && r.error.code, ErrorCode.Internal);
    const [line] = givenUpLines();
    assert.equal(line?.level, 50, 'an error');
    assert.equal(line?.actor, 't/Notes/a');
    assert.match(line?.err?.message ?? '', /invariant failed: planted: a state keepwork must never reach/);
    assert.equal(e.deps.slots.isOpen(parseAddress('t/Notes/a')), false, 'dropped, not kept open');
    assert.equal(e.deps.slots.isOpen(parseAddress('t/Notes/b')), true, 'the other actor is untouched');
    assert.equal(okResult(await e.call('t/Notes/a', 'count')), 1, 'restored from the bucket on its next call');
  });

  it('raised in a group-commit upload on its timer: given up and logged, not swallowed (planted)', async () => {
    lines.length = 0;
    okResult(await e.call('t/Notes/b', 'add', 'two')); // its upload waits for the group commit
    const slot = (await e.deps.slots.acquire(parseAddress('t/Notes/b'), false, e.generation))!;
    e.deps.slots.release(slot);
    slot.replica.index.captured = () => {
      throw invariantFailure('planted: at the capture'); // not through the replica's own give-up
    };
    const links = await listChain(store, parseAddress('t/Notes/b'));
    await e.clock.advance(25);
    await slot.replica.sync().catch(() => undefined);
    assert.equal((slot.replica.givenUp as { code?: string } | undefined)?.code, ErrorCode.Internal, 'given up');
    assert.match(givenUpLines()[0]?.err?.message ?? '', /planted: at the capture/);
    assert.deepEqual(await listChain(store, parseAddress('t/Notes/b')), links, 'nothing uploaded past the failure');
  });

  it('raised while taking the actor (no slot): INTERNAL to the caller and an error log with its message', async () => {
    lines.length = 0;
    const slots = e.deps.slots;
    const acquire = slots.acquire.bind(slots);
    slots.acquire = () => Promise.reject(invariantFailure('planted: while taking'));
    try {
      const r = await e.call('t/Notes/c', 'add', 'x');
      assert.equal(r.type === 'error' && r.error.code, ErrorCode.Internal);
    } finally {
      slots.acquire = acquire;
    }
    const [line] = givenUpLines();
    assert.equal(line?.level, 50);
    assert.equal(line?.actor, 't/Notes/c');
    assert.match(line?.err?.message ?? '', /planted: while taking/);
  });
});

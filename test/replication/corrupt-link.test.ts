/**
 * A corrupt delta in the bucket reaches the caller as CORRUPT_LINK, not as a handler failure (the
 * handler did nothing wrong): another node that restores the actor from the bucket cannot decode the link, so the
 * actor is not served and the call says why. (test/http/errors.test.ts shows the same through a
 * real node's library handle and HTTP.)
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { ErrorCode } from '../../src/core/errors.js';
import { encodeLink } from '../../src/replication/link.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const Notes = defineActor({
  init: (ctx: ActorContext) => void ctx.sql.exec('CREATE TABLE notes (text TEXT)'),
  methods: {
    add: (ctx: ActorContext, text: string) => ctx.sql.prepare('INSERT INTO notes VALUES (?)').run(text).changes,
    count: (ctx: ActorContext) => (ctx.sql.prepare('SELECT count(*) AS n FROM notes').get() as { n: number }).n,
  },
});
const A = 't/Notes/a';
const envs: InlineActors[] = [];
after(async () => {
  for (const e of envs) await e.cleanup();
});

describe('a corrupt delta in the bucket', () => {
  it('reaches the caller of another node as CORRUPT_LINK', async () => {
    const store = new MemoryStore();
    const first = new InlineActors({ Notes }, {}, store);
    envs.push(first);
    okResult(await first.callDurable(A, 'add', 'one')); // link 1: a snapshot
    // Link 2: a well-sealed link (its checksums hold) whose delta payload is not a delta.
    const payload = new TextEncoder().encode('this payload is not a page delta');
    const fields = { seq: 2, kind: 'delta' as const, generation: 1, nodeId: 'n9', epoch: 1, atMs: 0, pageSize: 4096, pageCount: 2 };
    await store.put(linkKey(parseAddress(A), 2), encodeLink(fields, payload), { ifNoneMatch: '*' });

    const other = new InlineActors({ Notes }, {}, store);
    envs.push(other);
    const r = await other.call(A, 'count');
    assert.equal(r.type, 'error');
    assert.equal(r.type === 'error' && r.error.code, ErrorCode.CorruptLink);
    assert.match(r.type === 'error' ? r.error.message : '', /delta payload starts with .* not the magic "KWPD"/);
  });
});

/**
 * Idempotent durable calls in the event pipeline (src/workers/idempotency.ts): a repeat answers
 * from `_keep_idem` without running the handler, on this node, after a restart and after another
 * node restored the actor from the bucket; other arguments are refused; retention by count and age.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { parseAddress } from '../../src/core/address.js';
import { actorDbPath, newMemoryImage, openMemoryActorDb } from '../../src/workers/actor-db.js';
import { idemCall, lookupCall, recordResult } from '../../src/workers/idempotency.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { checkIdempotencyKey, IDEMPOTENCY_KEY_MAX_CHARS } from '../../src/core/idempotency-key.js';
import type { EventResult } from '../../src/workers/messages.js';
import { runEvent } from '../../src/workers/pipeline.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

let runs = 0;

const Acc = defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (0)');
  },
  methods: {
    add(ctx: ActorContext, by: number) {
      runs++;
      ctx.sql.prepare('UPDATE t SET v = v + ?').run(by);
      return { v: (ctx.sql.prepare('SELECT v FROM t').get() as { v: number }).v, at: ctx.now() };
    },
    nothing() {
      runs++;
    },
    fail(ctx: ActorContext, why: string) {
      runs++;
      ctx.sql.exec('UPDATE t SET v = v + 1000');
      throw new Error(why);
    },
    async hang() {
      runs++;
      await new Promise(() => {});
    },
    value: (ctx: ActorContext) => (ctx.sql.prepare('SELECT v FROM t').get() as { v: number }).v,
    peek: (ctx: ActorContext) => ctx.sql.prepare('SELECT count(*) FROM _keep_idem').get(),
  },
});

const errorOf = (r: EventResult) => (r.type === 'error' ? { code: r.error.code, message: r.error.message } : { ok: r.result });

/** The keys recorded in the actor's database. */
function recordedKeys(env: InlineActors, address: string): Promise<string[]> {
  return env.readClosed(address, (db) =>
    (db.prepare('SELECT key FROM _keep_idem ORDER BY at, key').all() as { key: string }[]).map((r) => r.key),
  );
}

describe('idempotent durable calls (pipeline)', () => {
  const envs: InlineActors[] = [];
  const make = (...a: ConstructorParameters<typeof InlineActors>) => {
    const env = new InlineActors(...a);
    envs.push(env);
    return env;
  };
  after(async () => {
    for (const env of envs) await env.cleanup();
  });

  it('a repeat returns the first result without running the handler', async () => {
    const env = make({ Acc });
    const A = 't/Acc/repeat';
    runs = 0;
    const first = okResult(await env.callOnce('k-1', A, 'add', 5));
    await env.clock.advance(1_000);
    assert.deepEqual(okResult(await env.callOnce('k-1', A, 'add', 5)), first);
    assert.deepEqual(okResult(await env.callOnce('k-1', A, 'add', 5)), first);
    assert.equal(runs, 1);
    assert.equal(okResult(await env.call(A, 'value')), 5, 'applied once');
    okResult(await env.callOnce('k-2', A, 'add', 5));
    assert.equal(okResult(await env.call(A, 'value')), 10, 'another key runs');
    assert.equal(runs, 2);
    okResult(await env.callOnce('k-3', A, 'nothing'));
    assert.equal((await env.callOnce('k-3', A, 'nothing')).type, 'ok');
    assert.equal(okResult(await env.callOnce('k-3', A, 'nothing')), undefined);
    assert.equal(runs, 3);
  });

  it('the error a handler raised is recorded: a repeat returns it, nothing runs, the state stays rolled back', async () => {
    const env = make({ Acc });
    const A = 't/Acc/fails';
    runs = 0;
    const first = errorOf(await env.callOnce('e-1', A, 'fail', 'card declined'));
    assert.deepEqual(first, { code: 'HANDLER_FAILED', message: 'card declined' });
    assert.deepEqual(errorOf(await env.callOnce('e-1', A, 'fail', 'card declined')), first);
    assert.equal(runs, 1);
    assert.equal(okResult(await env.call(A, 'value')), 0);
  });

  it('a handler past its time limit is not recorded: a retry runs again', async () => {
    const env = make({ Acc }, { handlerTimeoutMs: 50 });
    const A = 't/Acc/slow';
    runs = 0;
    const first = env.callOnce('s-1', A, 'hang');
    await env.clock.advance(60);
    assert.equal(errorOf(await first).code, 'HANDLER_TIMEOUT');
    const second = env.callOnce('s-1', A, 'hang');
    await env.clock.advance(60);
    assert.equal(errorOf(await second).code, 'HANDLER_TIMEOUT');
    assert.equal(runs, 2);
  });

  it('a repeat with other arguments or another method is refused with IDEMPOTENCY_MISMATCH; nothing runs', async () => {
    const env = make({ Acc });
    const A = 't/Acc/mismatch';
    runs = 0;
    okResult(await env.callOnce('m-1', A, 'add', 1));
    assert.equal(errorOf(await env.callOnce('m-1', A, 'add', 2)).code, 'IDEMPOTENCY_MISMATCH');
    assert.equal(errorOf(await env.callOnce('m-1', A, 'add', 1, 1)).code, 'IDEMPOTENCY_MISMATCH');
    assert.equal(errorOf(await env.callOnce('m-1', A, 'nothing')).code, 'IDEMPOTENCY_MISMATCH');
    assert.equal(runs, 1);
    assert.equal(okResult(await env.call(A, 'value')), 1);
    assert.deepEqual(okResult(await env.callOnce('m-1', A, 'add', 1)), okResult(await env.callOnce('m-1', A, 'add', 1)));
  });

  it('keys are checked; a key needs a durable call; guest SQL cannot see _keep_idem', async () => {
    const env = make({ Acc });
    const A = 't/Acc/checks';
    for (const bad of ['', 'has space', 'tab\t', 'é', 'x'.repeat(IDEMPOTENCY_KEY_MAX_CHARS + 1)])
      assert.equal(errorOf(await env.callOnce(bad, A, 'add', 1)).code, 'BAD_REQUEST', JSON.stringify(bad));
    assert.equal(checkIdempotencyKey('x'.repeat(IDEMPOTENCY_KEY_MAX_CHARS)).length, IDEMPOTENCY_KEY_MAX_CHARS);
    assert.equal(checkIdempotencyKey('0b6f3c1e-7d2a-4f7e-9a51-3f0c2d7e8b90'), '0b6f3c1e-7d2a-4f7e-9a51-3f0c2d7e8b90');
    const plain = await runEvent(env.deps, {
      type: 'request',
      address: parseAddress(A),
      method: 'add',
      args: [1],
      durable: false,
      idempotencyKey: 'p',
    });
    assert.equal(errorOf(plain).code, 'BAD_REQUEST');
    assert.equal(okResult(await env.call(A, 'value')), 0, 'refused calls wrote nothing');
    okResult(await env.callOnce('c-1', A, 'add', 1));
    assert.equal(errorOf(await env.call(A, 'peek')).code, 'SQL_REFUSED');
  });

  it('the record survives a restart and a restore from the bucket on another node (it replicates with the state)', async () => {
    const env = make({ Acc });
    const A = 't/Acc/moves';
    runs = 0;
    const first = okResult(await env.callOnce('r-1', A, 'add', 7));
    const failed = errorOf(await env.callOnce('r-2', A, 'fail', 'no'));
    await env.restart();
    assert.deepEqual(okResult(await env.callOnce('r-1', A, 'add', 7)), first);
    // Another node: the same bucket, an empty data dir — it restores the actor from the chain.
    const other = make({ Acc }, {}, env.store);
    other.generation = env.generation + 1;
    assert.deepEqual(okResult(await other.callOnce('r-1', A, 'add', 7)), first);
    assert.deepEqual(errorOf(await other.callOnce('r-2', A, 'fail', 'no')), failed);
    assert.equal(errorOf(await other.callOnce('r-1', A, 'add', 8)).code, 'IDEMPOTENCY_MISMATCH');
    assert.equal(runs, 2);
    assert.equal(okResult(await other.call(A, 'value')), 7);
  });

  it('retention by count: the oldest keys past idempotencyKeysMax are pruned when a key is recorded', async () => {
    const env = make({ Acc }, { idempotencyKeysMax: 3 });
    const A = 't/Acc/count';
    runs = 0;
    for (const k of ['a', 'b', 'c', 'd', 'e']) {
      okResult(await env.callOnce(k, A, 'add', 1));
      await env.clock.advance(10);
    }
    assert.deepEqual(await recordedKeys(env, A), ['c', 'd', 'e']);
    for (const k of ['e', 'd', 'c']) okResult(await env.callOnce(k, A, 'add', 1));
    assert.equal(runs, 5, 'the kept keys answer from the record');
    okResult(await env.callOnce('a', A, 'add', 1));
    assert.equal(runs, 6, 'a pruned key runs again');
    assert.deepEqual(await recordedKeys(env, A), ['d', 'e', 'a']);
  });

  it('retention by age: a key older than idempotencyRetentionMs runs again, and is pruned by the next record', async () => {
    const env = make({ Acc }, { idempotencyRetentionMs: 1_000 });
    const A = 't/Acc/age';
    runs = 0;
    okResult(await env.callOnce('old', A, 'add', 1));
    okResult(await env.callOnce('older', A, 'add', 1));
    await env.clock.advance(999);
    okResult(await env.callOnce('old', A, 'add', 1));
    assert.equal(runs, 2, 'within the retention: answered from the record');
    await env.clock.advance(2);
    okResult(await env.callOnce('old', A, 'add', 1));
    assert.equal(runs, 3, 'past the retention: runs again');
    assert.deepEqual(await recordedKeys(env, A), ['old'], '"older" was pruned in the event that recorded "old" again');
    assert.equal(okResult(await env.call(A, 'value')), 3);
  });
});

describe('the record kept per open database', () => {
  const s = { idempotencyRetentionMs: 60_000, idempotencyKeysMax: 10 };

  it('a first record rolled back takes its table with it; the next one makes it again and is found', () => {
    // The statements on _keep_idem are prepared once per open database: one prepared while a
    // rolled-back transaction's table existed must not answer, nor fail, once it is gone.
    const db = openMemoryActorDb(Buffer.from(newMemoryImage()), parseAddress('t/Acc/rolled'));
    try {
      const first = idemCall('k1', 'add', [1]);
      assert.throws(
        () =>
          db.transaction(() => {
            recordResult(db, first, 'one', 1_000, s);
            assert.deepEqual(lookupCall(db, first, 1_000, s), { type: 'result', result: 'one' });
            throw new Error('roll back');
          })(),
        /roll back/,
      );
      assert.equal(lookupCall(db, first, 1_000, s), null, 'the table went with the transaction');
      const second = idemCall('k2', 'add', [2]);
      db.transaction(() => recordResult(db, second, 'two', 2_000, s))();
      assert.deepEqual(lookupCall(db, second, 2_000, s), { type: 'result', result: 'two' });
      assert.equal(lookupCall(db, first, 2_000, s), null);
    } finally {
      db.close();
    }
  });
});

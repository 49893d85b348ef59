import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { defineActor, type ActorContext, type AlarmInfo } from '../../src/workers/define-actor.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const A = 't1/Rem/a';
const seen: AlarmInfo[] = [];
let mode: 'fail' | 'ok' | 'reschedule-and-fail' | 'set-later-and-fail' | 'clear-and-fail' | 'hang' = 'ok';

const Rem = defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE log (what TEXT)');
  },
  async alarm(ctx: ActorContext, info: AlarmInfo) {
    seen.push(info);
    ctx.sql.prepare('INSERT INTO log VALUES (?)').run(`alarm ${info.retryCount}`);
    if (mode === 'reschedule-and-fail') ctx.setAlarm(ctx.now() + 100);
    if (mode === 'set-later-and-fail') ctx.setAlarm(ctx.now() + 3_600_000);
    if (mode === 'clear-and-fail') ctx.clearAlarm();
    if (mode === 'hang') await new Promise(() => {});
    if (mode !== 'ok') throw new Error('handler failed');
  },
  methods: {
    set(ctx: ActorContext, at: number) {
      ctx.setAlarm(at);
      return ctx.getAlarm();
    },
    get: (ctx: ActorContext) => ctx.getAlarm(),
    clear: (ctx: ActorContext) => ctx.clearAlarm(),
    log: (ctx: ActorContext) => ctx.sql.prepare('SELECT what FROM log').all(),
    sql: (ctx: ActorContext, sql: string) => ctx.sql.exec(sql),
    insertThenFail(ctx: ActorContext) {
      ctx.sql.exec("INSERT INTO log VALUES ('x')");
      ctx.setAlarm(ctx.now() + 5);
      throw new Error('boom');
    },
    remove: (ctx: ActorContext) => ctx.deleteActor(),
    initCount: (ctx: ActorContext) =>
      (ctx.sql.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'log'").get() as { n: number }).n,
  },
});

describe('event pipeline: committed retries (docs/alarm-index.md "Committed retries")', () => {
  const env = new InlineActors({ Rem });
  after(() => env.cleanup());
  const now = () => env.clock.now();

  async function failOnce(address: string) {
    await env.clock.runUntil((await env.getAlarm(address))!);
    return env.alarm(address);
  }

  it('a failed alarm moves to the retry time, doubling per failure, and the count is committed', async () => {
    mode = 'fail';
    seen.length = 0;
    okResult(await env.call(A, 'set', now()));
    const t0 = now();
    assert.equal((await env.alarm(A)).type, 'error');
    assert.equal(await env.getAlarm(A), t0 + 1000);
    await failOnce(A);
    assert.equal(await env.getAlarm(A), t0 + 1000 + 2000);
    await failOnce(A);
    assert.equal(await env.getAlarm(A), t0 + 3000 + 4000);
    assert.deepEqual(
      seen.map((i) => i.retryCount),
      [0, 1, 2],
    );
    assert.deepEqual(okResult(await env.call(A, 'log')), [], 'the failed runs wrote nothing');
  });

  it('getAlarm returns the next attempt’s time during retries', async () => {
    assert.equal(okResult(await env.call(A, 'get')), await env.getAlarm(A));
  });

  it('retries survive a restart (the count is in the database)', async () => {
    await env.restart();
    seen.length = 0;
    await failOnce(A);
    assert.equal(seen[0]!.retryCount, 3);
    assert.equal(await env.getAlarm(A), now() + 8000);
  });

  it('a fresh backoff per alarm: success resets the count, the next alarm starts at 1 s', async () => {
    mode = 'ok';
    await failOnce(A);
    assert.equal(await env.getAlarm(A), null, 'a successful run consumes the alarm');
    mode = 'fail';
    okResult(await env.call(A, 'set', now()));
    seen.length = 0;
    await env.alarm(A);
    assert.equal(seen[0]!.retryCount, 0);
    assert.equal(await env.getAlarm(A), now() + 1000);
  });

  it('setting an alarm outside a failed run resets the count', async () => {
    okResult(await env.call(A, 'set', now() + 10));
    seen.length = 0;
    await failOnce(A);
    assert.equal(seen[0]!.retryCount, 0);
  });

  it('backoff for handlers that reschedule and fail: the alarm it set for soon moves to the retry time', async () => {
    mode = 'reschedule-and-fail';
    okResult(await env.call(A, 'set', now()));
    await env.alarm(A);
    assert.equal(await env.getAlarm(A), now() + 1000);
    await failOnce(A);
    assert.equal(await env.getAlarm(A), now() + 2000, 'still backs off');
  });

  it('an alarm the failing handler set later stands; a clear stands', async () => {
    mode = 'set-later-and-fail';
    okResult(await env.call(A, 'set', now()));
    await env.alarm(A);
    assert.equal(await env.getAlarm(A), now() + 3_600_000);
    mode = 'clear-and-fail';
    okResult(await env.call(A, 'set', now()));
    await env.alarm(A);
    assert.equal(await env.getAlarm(A), null);
  });

  it('a handler past its time limit counts as a failure', async () => {
    const slow = new InlineActors({ Rem }, { handlerTimeoutMs: 50 });
    try {
      mode = 'hang';
      okResult(await slow.call(A, 'set', slow.clock.now()));
      const t0 = slow.clock.now();
      const run = slow.alarm(A);
      await slow.clock.advance(60);
      const r = await run;
      assert.equal(r.type === 'error' && r.error.code, 'HANDLER_TIMEOUT');
      assert.equal(await slow.getAlarm(A), r.alarmAt, 'the retry is committed');
      assert.equal(r.alarmAt, t0 + 50 + 1000, 'one second after the limit ended the run');
    } finally {
      await slow.cleanup();
    }
  });

  it('an alarm not yet due does not run', async () => {
    mode = 'ok';
    seen.length = 0;
    okResult(await env.call(A, 'set', now() + 60_000));
    const r = await env.alarm(A);
    assert.deepEqual(r, { type: 'ok', alarmAt: now() + 60_000, deleted: false, ran: false });
    assert.equal(seen.length, 0);
  });
});

describe('event pipeline: transactions, init, guard, delete', () => {
  const env = new InlineActors({ Rem });
  after(() => env.cleanup());

  it('init runs once, in the first event', async () => {
    assert.equal(okResult(await env.call('t1/Rem/i', 'initCount')), 1);
    assert.equal(okResult(await env.call('t1/Rem/i', 'initCount')), 1);
  });

  it('a throwing request rolls back its SQL and its alarm change', async () => {
    const r = await env.call('t1/Rem/r', 'insertThenFail');
    assert.equal(r.type === 'error' && r.error.code, 'HANDLER_FAILED');
    assert.deepEqual(okResult(await env.call('t1/Rem/r', 'log')), []);
    assert.equal(await env.getAlarm('t1/Rem/r'), null);
  });

  for (const sql of [
    'SELECT * FROM _keep_alarm',
    'DELETE FROM "_KEEP_meta"',
    "ATTACH DATABASE '/tmp/x.db' AS x",
    'DETACH x',
    "VACUUM INTO '/tmp/copy.db'",
    'PRAGMA writable_schema = 1',
    'PRAGMA journal_mode = DELETE',
    'PRAGMA user_version = 5',
    "INSERT INTO '_keep_meta' VALUES ('initialized', '0')",
    'CREATE TRIGGER t AFTER INSERT ON log BEGIN DELETE FROM _keep_alarm; END',
    'INSERT OR ROLLBACK INTO log VALUES (1)',
    'COMMIT',
    'SAVEPOINT s1',
    "SELECT load_extension('x')",
  ]) {
    it(`guest SQL is refused before it runs: ${sql}`, async () => {
      const r = await env.call('t1/Rem/g', 'sql', sql);
      assert.equal(r.type === 'error' && r.error.code, 'SQL_REFUSED', JSON.stringify(r));
    });
  }

  it('guest SQL may mention _keep_ inside a string and read allowed pragmas', async () => {
    okResult(await env.call('t1/Rem/g', 'sql', "INSERT INTO log VALUES ('_keep_ is fine here'); PRAGMA table_info(log)"));
    assert.deepEqual(okResult(await env.call('t1/Rem/g', 'log')), [{ what: '_keep_ is fine here' }]);
  });

  it('guest SQL may create a trigger; it fires in a later event', async () => {
    const trigger = "CREATE TRIGGER twice AFTER INSERT ON log WHEN new.what <> 'again' BEGIN INSERT INTO log VALUES ('again'); END";
    okResult(await env.call('t1/Rem/trig', 'sql', trigger));
    okResult(await env.call('t1/Rem/trig', 'sql', "INSERT INTO log VALUES ('once')"));
    assert.deepEqual(okResult(await env.call('t1/Rem/trig', 'log')), [{ what: 'once' }, { what: 'again' }]);
  });

  it('an unknown method or class is NOT_FOUND and creates nothing', async () => {
    const r = await env.call('t1/Rem/nobody', 'nope');
    assert.equal(r.type === 'error' && r.error.code, 'NOT_FOUND');
    const c = await env.call('t1/Nope/nobody', 'x');
    assert.equal(c.type === 'error' && c.error.code, 'NOT_FOUND');
    assert.equal(existsSync(actorDbPath(env.dataDir, parseAddress('t1/Rem/nobody'))), false);
  });

  it('a new actor whose first call its handler refuses leaves no local file and nothing in the bucket', async () => {
    const path = actorDbPath(env.dataDir, parseAddress('t1/Rem/refused'));
    const r = await env.call('t1/Rem/refused', 'insertThenFail');
    assert.equal(r.type === 'error' && r.error.code, 'HANDLER_FAILED');
    const left = ['', '-wal', '-shm', '.chain'].filter((suffix) => existsSync(path + suffix));
    assert.deepEqual(left, []);
    assert.deepEqual(
      (await env.store.list({ prefix: 'state/t1/Rem/' })).keys.filter((k) => k.includes(Buffer.from('refused').toString('hex'))),
      [],
    );
    assert.equal(okResult(await env.call('t1/Rem/refused', 'initCount')), 1, 'the next call creates it as new');
    assert.ok(existsSync(path));
  });

  it('a new actor is kept once something committed: a durable call’s recorded error, or a later call', async () => {
    const keyed = await env.callOnce('k-1', 't1/Rem/recorded', 'insertThenFail');
    assert.equal(keyed.type === 'error' && keyed.error.code, 'HANDLER_FAILED');
    assert.ok(existsSync(actorDbPath(env.dataDir, parseAddress('t1/Rem/recorded'))), 'the recorded error is the actor’s');
    okResult(await env.call('t1/Rem/kept', 'log'));
    assert.equal((await env.call('t1/Rem/kept', 'insertThenFail')).type, 'error');
    assert.ok(existsSync(actorDbPath(env.dataDir, parseAddress('t1/Rem/kept'))));
  });

  it('an alarm for an actor that does not exist creates nothing', async () => {
    assert.deepEqual(await env.alarm('t1/Rem/ghost'), { type: 'ok', alarmAt: null, deleted: false, ran: false });
    assert.equal(existsSync(actorDbPath(env.dataDir, parseAddress('t1/Rem/ghost'))), false);
  });

  it('deleteActor removes the actor’s files and its alarm; the next call starts fresh', async () => {
    okResult(await env.call('t1/Rem/d', 'set', env.clock.now() + 1000));
    const path = actorDbPath(env.dataDir, parseAddress('t1/Rem/d'));
    assert.ok(existsSync(path));
    const r = await env.call('t1/Rem/d', 'remove');
    assert.equal(r.type === 'ok' && r.deleted, true);
    assert.equal(r.alarmAt, null);
    assert.equal(existsSync(path), false);
    assert.equal(okResult(await env.call('t1/Rem/d', 'get')), null);
  });

  it('names too long for a file name still get a file of their own', async () => {
    const long = 'n'.repeat(400);
    okResult(await env.call(`t1/Rem/${long}`, 'set', 5));
    assert.equal(await env.getAlarm(`t1/Rem/${long}`), 5);
    assert.equal(await env.getAlarm(`t1/Rem/${'n'.repeat(399)}`), null);
  });
});

/**
 * Random SQL workloads through an actor — schema changes, multi-row transactions, transactions
 * that spill the page cache, deletes, failed (rolled back) events — replicated as the runtime
 * does it (plain and durable calls, group commit, snapshots and deltas); then a fresh node
 * restores from the bucket alone and its database must equal the live one.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { parseAddress } from '../../src/core/address.js';
import { MemoryStore } from '../../src/store/memory.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';
import { dumpDb } from './dump.js';

type Op =
  | { k: 'insert'; rows: number; size: number }
  | { k: 'update'; mod: number; size: number }
  | { k: 'delete'; mod: number }
  | { k: 'addColumn' }
  | { k: 'newTable' }
  | { k: 'dropTable' }
  | { k: 'index' }
  | { k: 'fail' };

const Store = defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE t0 (id INTEGER PRIMARY KEY, v BLOB, n INTEGER)');
  },
  methods: {
    read: (ctx: ActorContext) => ctx.sql.prepare('SELECT count(*) AS n FROM t0').get(),
    apply(ctx: ActorContext, op: Op, salt: number) {
      const tables = (
        ctx.sql.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 't%' ORDER BY name").all() as { name: string }[]
      ).map((r) => r.name);
      const t = tables[salt % tables.length] ?? 't0';
      const blob = (size: number) => Buffer.alloc(size, salt & 0xff);
      switch (op.k) {
        case 'insert': {
          const ins = ctx.sql.prepare(`INSERT INTO "${t}" (v, n) VALUES (?, ?)`);
          for (let i = 0; i < op.rows; i++) ins.run(blob(op.size), salt + i);
          return;
        }
        case 'update':
          return void ctx.sql.prepare(`UPDATE "${t}" SET v = ?, n = n + 1 WHERE n % ? = 0`).run(blob(op.size), op.mod);
        case 'delete':
          return void ctx.sql.prepare(`DELETE FROM "${t}" WHERE n % ? = 0`).run(op.mod);
        case 'addColumn':
          return ctx.sql.exec(`ALTER TABLE "${t}" ADD COLUMN c${salt} TEXT DEFAULT 'x${salt}'`);
        case 'newTable':
          return ctx.sql.exec(`CREATE TABLE IF NOT EXISTS t${salt} (id INTEGER PRIMARY KEY, v BLOB, n INTEGER)`);
        case 'dropTable':
          if (t !== 't0') ctx.sql.exec(`DROP TABLE "${t}"`);
          return;
        case 'index':
          return ctx.sql.exec(`CREATE INDEX IF NOT EXISTS i${salt} ON "${t}" (n)`);
        case 'fail':
          ctx.sql.prepare(`INSERT INTO "${t}" (v, n) VALUES (?, ?)`).run(blob(100_000), salt);
          throw new Error('rolled back');
      }
    },
  },
});

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      k: fc.constant('insert' as const),
      rows: fc.integer({ min: 1, max: 40 }),
      size: fc.integer({ min: 0, max: 6000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('insert' as const),
      rows: fc.integer({ min: 50, max: 120 }),
      size: fc.integer({ min: 8_000, max: 40_000 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('update' as const),
      mod: fc.integer({ min: 1, max: 5 }),
      size: fc.integer({ min: 0, max: 9000 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('delete' as const), mod: fc.integer({ min: 2, max: 6 }) }) },
  { weight: 1, arbitrary: fc.constantFrom<Op>({ k: 'addColumn' }, { k: 'newTable' }, { k: 'dropTable' }, { k: 'index' }, { k: 'fail' }) },
);

const envs: InlineActors[] = [];
after(async () => {
  for (const e of envs) await e.cleanup();
});

describe('replication: random workloads restore to the same database', () => {
  it('the restored database equals the live one (logical dump)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(op, fc.nat(1000), fc.boolean(), fc.integer({ min: 0, max: 30 })), { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 2, max: 8 }),
        async (steps, snapshotEveryLinks) => {
          const store = new MemoryStore();
          const options = { replicationDelayMs: 10, snapshotEveryLinks, checkpointEveryLinks: 3, dbCacheMax: 1 };
          const live = new InlineActors({ Store }, options, store);
          // The fresh node restores into a file (what is compared), not into memory.
          const fresh = new InlineActors({ Store }, { ...options, alarmsInMemory: false }, store);
          envs.push(live, fresh);
          const A = 'w/Store/one';
          for (const [o, salt, durable, waitMs] of steps) {
            const r = durable ? await live.callDurable(A, 'apply', o, salt) : await live.call(A, 'apply', o, salt);
            if (o.k !== 'fail') okResult(r);
            await live.clock.advance(waitMs);
          }
          await live.restart(options); // flushes everything
          okResult(await fresh.call('w/Store/other', 'apply', { k: 'newTable' }, 1)); // unrelated actor
          // Takes (restores) the actor and writes nothing: not a method call, which would run
          // `init` on an actor whose every event failed (found by seed 1909117232).
          await fresh.getAlarm(A);
          await fresh.restart({ ...options, alarmsInMemory: false });
          const a = parseAddress(A);
          const [restored, original] = [actorDbPath(fresh.dataDir, a), actorDbPath(live.dataDir, a)];
          // An actor whose every event failed was never created: nothing to restore, on either side
          // (seed 892352166: one failed call).
          assert.equal(existsSync(restored), existsSync(original), 'the actor is restored if and only if it exists');
          if (existsSync(original)) assert.equal(dumpDb(restored), dumpDb(original));
        },
      ),
      { numRuns: 12 },
    );
  });
});

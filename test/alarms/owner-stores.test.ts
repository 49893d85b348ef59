/**
 * The owner's index sequencing against the real stores: the folder bucket always, S3 (Ceph RGW)
 * when KEEPWORK_TEST_S3_URL is set. Same rules as owner.test.ts, real I/O.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { entryKey, parseEntryKey, parseIndexed } from '../../src/alarms/keys.js';
import { listChain, restoreChain } from '../../src/replication/chain.js';
import { listAll } from '../../src/store/keys.js';
import { openStore } from '../../src/store/open.js';
import type { ObjectStore } from '../../src/store/types.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';
import { RecordingStore } from '../helpers/recording-store.js';
import Database from 'better-sqlite3';
import { waitFor } from '../helpers/wait.js';

const Rem = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec('CREATE TABLE t (v INTEGER)'),
  methods: {
    set: (ctx: ActorContext, at: number) => ctx.setAlarm(at),
    touch: (ctx: ActorContext) => void ctx.sql.prepare('INSERT INTO t VALUES (1)').run(),
  },
});
const A = 't/Rem/a';
const address = parseAddress(A);

type Target = { label: string; open: () => { store: ObjectStore; cleanup: () => Promise<void> } };
const targets: Target[] = [
  {
    label: 'fs',
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), 'kw-owner-fs-'));
      const store = openStore(dir);
      return { store, cleanup: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
];
const s3 = process.env.KEEPWORK_TEST_S3_URL;
if (s3) {
  targets.push({
    label: 's3',
    open: () => {
      const store = openStore(s3.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/owner-${randomBytes(6).toString('hex')}/`));
      return {
        store,
        cleanup: async () => {
          const keys: string[] = [];
          for await (const k of listAll(store)) keys.push(k);
          if (keys.length) await store.deleteMany(keys);
          await store.close();
        },
      };
    },
  });
}

const envs: InlineActors[] = [];
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const e of envs) await e.cleanup();
  for (const c of cleanups) await c();
});

for (const target of targets) {
  describe(`alarm index, owner side, on ${target.label}`, () => {
    function setup(generation = 1, dataDir?: string) {
      const { store, cleanup } = target.open();
      cleanups.push(cleanup);
      const rec = new RecordingStore(store);
      const e = new InlineActors({ Rem }, { replicationDelayMs: 20 }, rec, dataDir);
      e.generation = generation;
      envs.push(e);
      return { rec, e, store };
    }
    const entries = async (s: ObjectStore) => {
      const out: string[] = [];
      for await (const k of listAll(s, { prefix: 'alarms/' })) out.push(k);
      return out;
    };

    it('the owner lists the committed alarm before replicating the event, and removes the entry it replaced after; one PUT and one DELETE', async () => {
      const { rec, e, store } = setup(5);
      okResult(await e.callDurable(A, 'set', 1_900_000_000_000));
      rec.log.length = 0;
      okResult(await e.callDurable(A, 'set', 1_900_000_001_000));
      const writes = rec.log.filter((x) => x.op === 'put' || x.op === 'delete').map((x) => `${x.op} ${x.key.split('/')[0]}`);
      assert.deepEqual(writes, ['put alarms', 'put state', 'delete alarms']);
      // The DELETE is sent after the upload and not awaited by the durable reply: let it land.
      await waitFor('the DELETE of the replaced entry to land', 10_000, async () => (await entries(store)).length <= 1, 20);
      const left = (await entries(store)).map((k) => parseEntryKey(k)!);
      assert.deepEqual(
        left.map((x) => [x.dueMs, x.tag?.generation]),
        [[1_900_000_001_000, 5]],
      );
      rec.log.length = 0;
      okResult(await e.callDurable(A, 'touch'));
      assert.equal(rec.count('put', 'alarms/') + rec.count('delete', 'alarms/'), 0, 'an event that leaves the alarm alone');
    });

    it('R4: an alarm from single-node data is indexed before its first upload', async () => {
      const local = setup(1);
      okResult(await local.e.callDurable(A, 'set', 1_900_000_000_000));
      await local.e.restart();
      const joined = setup(1, local.e.dataDir);
      okResult(await joined.e.callDurable(A, 'touch'));
      const writes = joined.rec.log.filter((x) => x.op === 'put').map((x) => x.key.split('/')[0]);
      assert.equal(writes[0], 'alarms', 'the entry first');
      const dir = mkdtempSync(join(tmpdir(), 'kw-owner-r4-'));
      await restoreChain(joined.store, address, join(dir, 'x.db'), { uptoSeq: 1 });
      const db = new Database(join(dir, 'x.db'), { readonly: true });
      const named = parseIndexed(
        (db.prepare("SELECT value FROM _keep_meta WHERE key = 'alarm_indexed'").get() as { value: string }).value,
      )!;
      db.close();
      rmSync(dir, { recursive: true, force: true });
      assert.ok(await joined.store.head(entryKey({ address, dueMs: named.at, tag: named.tag })), 'link 1 names an entry that exists');
    });

    it('giving the actor up after a failed listing: nothing is uploaded for the event', async () => {
      const { rec, e, store } = setup(1);
      okResult(await e.callDurable(A, 'set', 1_900_000_000_000));
      const links = (await listChain(store, address)).length;
      rec.fail = (op, key) => op === 'put' && key.startsWith('alarms/');
      const res = e.callDurable(A, 'set', 1_900_000_500_000);
      for (let i = 0; i < 50; i++) await e.clock.advance(100); // store retries sleep on the virtual clock
      const r = await res;
      assert.equal(r.type, 'error');
      rec.fail = () => false;
      assert.equal((await listChain(store, address)).length, links);
    });
  });
}

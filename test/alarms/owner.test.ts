/**
 * The owner's side of the alarm index (docs/alarm-index.md), through the real event pipeline on a memory
 * bucket. Test names state the rules of docs/alarm-index.md.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { entryKey, parseEntryKey, parseIndexed } from '../../src/alarms/keys.js';
import { deletable, indexPlan } from '../../src/alarms/owner.js';
import { SAFE_RULES } from '../../src/alarms/rules.js';
import { listChain, restoreChain } from '../../src/replication/chain.js';
import { MemoryStore, type StoreRequest } from '../../src/store/memory.js';
import { defineActor, type ActorContext, type AlarmInfo } from '../../src/workers/define-actor.js';
import { InlineActors, inlineEnvs, okResult } from '../helpers/inline-actors.js';
import { tempDirs } from '../helpers/temp.js';
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

let failAlarm = false;
const Rem = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec('CREATE TABLE t (v INTEGER)'),
  alarm(_ctx: ActorContext, _info: AlarmInfo) {
    if (failAlarm) throw new Error('fails');
  },
  methods: {
    set: (ctx: ActorContext, at: number) => ctx.setAlarm(at),
    clear: (ctx: ActorContext) => ctx.clearAlarm(),
    touch: (ctx: ActorContext) => void ctx.sql.prepare('INSERT INTO t VALUES (1)').run(),
    remove: (ctx: ActorContext) => ctx.deleteActor(),
    async setThenCheckpoint(ctx: ActorContext, at: number) {
      ctx.setAlarm(at);
      await ctx.checkpoint();
      throw new Error('after the checkpoint');
    },
  },
});

const A = 't/Rem/a';
const address = parseAddress(A);
const env = inlineEnvs({ Rem }, { replicationDelayMs: 20 });
const tmp = tempDirs('kw-owner-'); // restored copies of a chain, removed when the tests end

/** A memory bucket that records every request, for exact counts and ordering. */
function recordingStore() {
  const log: StoreRequest[] = [];
  const store = new MemoryStore({ faults: (r) => void log.push(r) });
  const count = (op: string, prefix: string) => log.filter((r) => r.op === op && r.key.startsWith(prefix)).length;
  return { store, log, count, reset: () => (log.length = 0) };
}

function indexedOf(e: InlineActors) {
  return e.readClosed(A, (db) =>
    parseIndexed(
      (db.prepare("SELECT value FROM _keep_meta WHERE key = 'alarm_indexed'").get() as { value: string } | undefined)?.value ?? null,
    ),
  );
}

const entries = (s: MemoryStore) => s.keys().filter((k) => k.startsWith('alarms/'));

describe('alarm index, owner side (pure rules)', () => {
  it('an unchanged alarm keeps its entry, whichever owner wrote it', () => {
    assert.deepEqual(indexPlan(5, { at: 5, tag: { generation: 1, nonce: 'a' } }, SAFE_RULES), { list: null, replaces: null });
  });
  it('a legacy entry is replaced by a tagged one on the next event (migration)', () => {
    assert.deepEqual(indexPlan(5, { at: 5, tag: null }, SAFE_RULES), { list: 5, replaces: { at: 5, tag: null } });
  });
  it('a changed alarm lists a new entry and replaces the old; a clear replaces it with none', () => {
    assert.deepEqual(indexPlan(7, { at: 5, tag: { generation: 1, nonce: 'a' } }, SAFE_RULES), {
      list: 7,
      replaces: { at: 5, tag: { generation: 1, nonce: 'a' } },
    });
    assert.deepEqual(indexPlan(null, { at: 5, tag: null }, SAFE_RULES), { list: null, replaces: { at: 5, tag: null } });
    assert.deepEqual(indexPlan(null, null, SAFE_RULES), { list: null, replaces: null });
  });
  it('R3: never delete an entry with a generation above one’s own', () => {
    assert.equal(deletable({ at: 1, tag: { generation: 4, nonce: 'a' } }, 3, SAFE_RULES), false);
    assert.equal(deletable({ at: 1, tag: { generation: 3, nonce: 'a' } }, 3, SAFE_RULES), true);
    assert.equal(deletable({ at: 1, tag: null }, 0, SAFE_RULES), true);
  });
  it('with a rule off (the simulator only): a legacy entry is kept, and a newer generation deleted', () => {
    assert.deepEqual(indexPlan(5, { at: 5, tag: null }, { ...SAFE_RULES, taggedKeys: false }), { list: null, replaces: null });
    assert.equal(deletable({ at: 1, tag: { generation: 4, nonce: 'a' } }, 3, { ...SAFE_RULES, generationCheck: false }), true);
  });
  it('the production rules are all on, and frozen', () => {
    assert.ok(Object.isFrozen(SAFE_RULES));
    assert.ok(Object.values(SAFE_RULES).every((on) => on === true));
  });
});

describe('alarm index, owner side (through the pipeline)', () => {
  it('recording the listed entry: the entry exists and alarm_indexed names it, under the owner’s generation', async () => {
    const r = recordingStore();
    const e = env(r.store, 7);
    okResult(await e.call(A, 'set', 1_900_000_000_000));
    const [key] = entries(r.store);
    const parsed = parseEntryKey(key!)!;
    assert.deepEqual({ due: parsed.dueMs, gen: parsed.tag?.generation }, { due: 1_900_000_000_000, gen: 7 });
    assert.deepEqual(await indexedOf(e), { at: 1_900_000_000_000, tag: parsed.tag });
  });

  it('one extra PUT and one DELETE per event that changes the alarm; none for events that leave it alone, even under a new generation', async () => {
    const r = recordingStore();
    const e = env(r.store, 1);
    okResult(await e.call(A, 'set', 1_900_000_000_000));
    await e.clock.advance(25);
    r.reset();
    okResult(await e.call(A, 'set', 1_900_000_060_000));
    assert.equal(r.count('put', 'alarms/'), 1, 'PUT before the commit');
    assert.equal(r.count('delete', 'alarms/'), 0, 'the old entry stays until the event is uploaded');
    await e.clock.advance(25);
    assert.equal(r.count('delete', 'alarms/'), 1);
    assert.equal(entries(r.store).length, 1);
    r.reset();
    okResult(await e.call(A, 'touch'));
    await e.clock.advance(25);
    assert.equal(r.count('put', 'alarms/') + r.count('delete', 'alarms/'), 0, 'an event that leaves the alarm alone');
    await e.restart();
    e.generation = 2;
    r.reset();
    okResult(await e.call(A, 'touch'));
    await e.clock.advance(25);
    assert.equal(r.count('put', 'alarms/') + r.count('delete', 'alarms/'), 0, 'nor under a new generation');
  });

  it('the owner lists the committed alarm before replicating the event, and removes the entry it replaced after', async () => {
    const r = recordingStore();
    const e = env(r.store, 1);
    okResult(await e.callDurable(A, 'set', 1_900_000_000_000));
    r.reset();
    okResult(await e.callDurable(A, 'set', 1_900_000_001_000));
    const order = r.log.filter((x) => x.op !== 'get' && x.op !== 'list' && x.op !== 'head').map((x) => `${x.op} ${x.key.split('/')[0]}`);
    assert.deepEqual(order, ['put alarms', 'put state', 'delete alarms']);
  });

  it('committed retries: the index lists the retry time, so no sweep delivers it early', async () => {
    const r = recordingStore();
    const e = env(r.store, 1);
    const at = e.clock.now();
    okResult(await e.call(A, 'set', at));
    failAlarm = true;
    try {
      await e.alarm(A);
    } finally {
      failAlarm = false;
    }
    await e.clock.advance(25);
    assert.deepEqual(
      entries(r.store).map((k) => parseEntryKey(k)!.dueMs),
      [at + 1000],
    );
  });

  it('clearing the alarm removes its entry once the clear is uploaded; deleting the actor too', async () => {
    const r = recordingStore();
    const e = env(r.store, 1);
    okResult(await e.call(A, 'set', 1_900_000_000_000));
    okResult(await e.call(A, 'clear'));
    await e.clock.advance(25);
    assert.deepEqual(entries(r.store), []);
    assert.equal(await indexedOf(e), null);
    okResult(await e.call(A, 'set', 1_900_000_000_000));
    await e.clock.advance(25);
    okResult(await e.call(A, 'remove'));
    assert.deepEqual(entries(r.store), []);
  });

  it('legacy entries next to tagged ones: a bare <at> is read as a legacy entry and migrated on the next event', async () => {
    const local = env(new MemoryStore(), 1);
    okResult(await local.callDurable(A, 'set', 1_900_000_000_000));
    await local.restart();
    // An older node listed it the legacy way: a legacy key in the bucket, a bare <at> in the state.
    const dbPath = join(local.dataDir, 'actors', 't', 'Rem', '61.db');
    const db = new Database(dbPath);
    db.prepare("UPDATE _keep_meta SET value = '1900000000000' WHERE key = 'alarm_indexed'").run();
    db.close();
    rmSidecar(dbPath);
    const r = recordingStore();
    const legacy = entryKey({ address, dueMs: 1_900_000_000_000, tag: null });
    await r.store.put(legacy, new Uint8Array(0));
    const e = env(r.store, 2, { dataDir: local.dataDir });
    okResult(await e.callDurable(A, 'touch')); // first upload (R4): a tagged entry is listed
    okResult(await e.callDurable(A, 'touch')); // an event later: the legacy entry still stands beside it
    const both = entries(r.store).map((k) => parseEntryKey(k)!.tag === null);
    assert.deepEqual(both.sort(), [false, true], 'tagged and legacy side by side (nothing removed before an upload)');
    assert.equal((await indexedOf(e))!.tag!.generation, 2);
  });

  it('a legacy entry named by the state is replaced by a tagged one on the next event and deleted by its exact name', async () => {
    const r = recordingStore();
    const e = env(r.store, 1);
    okResult(await e.callDurable(A, 'set', 1_900_000_000_000));
    const [tagged] = entries(r.store);
    await e.restart();
    const legacy = entryKey({ address, dueMs: 1_900_000_000_000, tag: null });
    await r.store.put(legacy, new Uint8Array(0));
    await r.store.delete(tagged!);
    const dbPath = join(e.dataDir, 'actors', 't', 'Rem', '61.db');
    const db = new Database(dbPath);
    db.prepare("UPDATE _keep_meta SET value = '1900000000000' WHERE key = 'alarm_indexed'").run();
    db.close(); // the state now names the legacy entry, as an older node left it
    r.reset();
    okResult(await e.callDurable(A, 'touch'));
    assert.equal(r.count('put', 'alarms/'), 1);
    assert.deepEqual(
      r.log.filter((x) => x.op === 'delete').map((x) => x.key),
      [legacy],
    );
    assert.deepEqual(
      entries(r.store).map((k) => parseEntryKey(k)!.tag !== null),
      [true],
    );
  });

  it('R4: an alarm from single-node data is indexed before its first upload', async () => {
    const local = env(new MemoryStore(), 1);
    okResult(await local.callDurable(A, 'set', 1_900_000_000_000));
    await local.restart();
    const r = recordingStore();
    const joined = env(r.store, 1, { dataDir: local.dataDir }); // the same data dir joins a new (empty) bucket
    assert.equal(await joined.getAlarm(A), 1_900_000_000_000);
    await joined.clock.advance(25);
    const writes = r.log.filter((x) => x.op === 'put').map((x) => x.key.split('/')[0]);
    assert.deepEqual(writes, ['alarms', 'state'], 'the entry first, then link 1');
    const restoredDir = tmp();
    const out = join(restoredDir, 'x.db');
    await restoreChain(r.store, address, out);
    const db = new Database(out, { readonly: true });
    const named = parseIndexed((db.prepare("SELECT value FROM _keep_meta WHERE key = 'alarm_indexed'").get() as { value: string }).value)!;
    db.close();
    assert.ok(r.store.peek(entryKey({ address, dueMs: named.at, tag: named.tag })), 'the snapshot names an entry that exists');
  });

  it('R4: if the entry cannot be listed, nothing is uploaded and the alarm stays on that node only', async () => {
    const local = env(new MemoryStore(), 1);
    okResult(await local.callDurable(A, 'set', 1_900_000_000_000));
    await local.restart();
    const store = new MemoryStore({ faults: (x) => (x.op === 'put' && x.key.startsWith('alarms/') ? { fail: true } : undefined) });
    const joined = env(store, 1, { dataDir: local.dataDir });
    const res = await settle(joined, joined.call(A, 'touch'));
    assert.equal(res.type === 'error' && res.error.code, 'STORE_UNAVAILABLE');
    await joined.clock.advance(100);
    assert.deepEqual(await listChain(store, address), []);
  });

  it('giving the actor up after a failed listing: the event rolls back and is not uploaded', async () => {
    let failing = false;
    const store = new MemoryStore({
      faults: (x) => (failing && x.op === 'put' && x.key.startsWith('alarms/') ? { fail: true } : undefined),
    });
    const e = env(store, 1);
    okResult(await e.callDurable(A, 'set', 1_900_000_000_000));
    const links = (await listChain(store, address)).length;
    failing = true;
    const res = await settle(e, e.callDurable(A, 'set', 1_900_000_500_000));
    assert.equal(res.type, 'error');
    failing = false;
    assert.equal((await listChain(store, address)).length, links, 'nothing uploaded for it');
    assert.equal(await settle(e, e.getAlarm(A)), 1_900_000_000_000, 'the change rolled back');
  });

  it('listing from exec-durable: ctx.checkpoint() lists the alarm set so far before its mid-event upload', async () => {
    const r = recordingStore();
    const e = env(r.store, 3);
    const res = await e.callDurable(A, 'setThenCheckpoint', 1_900_000_000_000);
    assert.equal(res.type, 'error', 'the handler threw after its checkpoint');
    const [key] = entries(r.store);
    assert.equal(parseEntryKey(key!)!.dueMs, 1_900_000_000_000);
    const restoredDir = tmp();
    await restoreChain(r.store, address, join(restoredDir, 'x.db'));
    const db = new Database(join(restoredDir, 'x.db'), { readonly: true });
    const at = (db.prepare('SELECT at FROM _keep_alarm').get() as { at: number }).at;
    db.close();
    assert.equal(at, 1_900_000_000_000, 'the uploaded state holds the alarm, and its entry exists');
  });

  it('late deletes after a takeover: an owner never deletes an entry a newer generation wrote (R3)', async () => {
    const r = recordingStore();
    const newer = env(r.store, 9);
    okResult(await newer.callDurable(A, 'set', 1_900_000_000_000));
    await newer.restart();
    const stale = env(r.store, 4); // a stale owner (lower generation) that still runs the actor
    okResult(await stale.callDurable(A, 'set', 1_900_000_100_000));
    const gens = entries(r.store)
      .map((k) => parseEntryKey(k)!.tag!.generation)
      .sort();
    assert.deepEqual(gens, [4, 9], 'the newer owner’s entry survives');
  });
});

function rmSidecar(dbPath: string): void {
  rmSync(dbPath + '.chain', { force: true });
}

/** Runs `p` to completion, moving the env's virtual clock (store retries sleep on it). */
async function settle<T>(e: InlineActors, p: Promise<T>): Promise<T> {
  let done = false;
  const out = p.finally(() => (done = true));
  for (let i = 0; i < 200 && !done; i++) await e.clock.advance(100);
  return out;
}

describe('the LeaseView', () => {
  it('without a valid lease an event that changes the alarm lists nothing, uploads nothing and gives the actor up', async () => {
    const r = recordingStore();
    const e = env(r.store, 1);
    okResult(await e.callDurable(A, 'set', 1_900_000_000_000));
    const links = (await listChain(r.store, address)).length;
    e.leaseValid = false;
    r.reset();
    const res = await e.callDurable(A, 'set', 1_900_000_500_000);
    assert.equal(res.type === 'error' && res.error.code, 'LEASE_LOST');
    const plain = await e.callDurable(A, 'touch');
    assert.equal(plain.type, 'error', 'a durable call cannot upload either');
    assert.equal(r.count('put', 'alarms/') + r.count('put', 'state/'), 0);
    assert.equal((await listChain(r.store, address)).length, links);
  });
});

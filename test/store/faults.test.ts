/**
 * FaultStore (src/store/testing/faults.ts): each fault as the caller meets it, the burst windows,
 * the seeded schedule, the URL; and with no fault drawn it is the inner store (conformance).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SimClock, SystemClock } from '../../src/core/clock.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { SeededRandom } from '../../src/core/random.js';
import { MemoryStore } from '../../src/store/memory.js';
import { openStore } from '../../src/store/open.js';
import { FaultStore, NO_FAULTS, failingFsync, parseFaultUrl, type FaultPlan } from '../../src/store/testing/faults.js';
import { fsyncDoesNothing } from '../../src/store/fs/io.js';
import { LatencyStore } from '../../src/store/testing/latency.js';
import { throttleOf } from '../../src/store/throttle/signal.js';
import { text } from '../helpers/bytes.js';
import { runConformance } from './conformance.js';

runConformance('fault+ with no faults around memory', async () => {
  const store = new FaultStore(new MemoryStore(), new SystemClock(), new SeededRandom(1), NO_FAULTS);
  return { store, reopen: async () => store, cleanup: () => store.close() };
});

function faulty(plan: Partial<FaultPlan>, seed = 1) {
  const clock = new SimClock(0);
  const inner = new MemoryStore({ clock });
  return { clock, inner, store: new FaultStore(inner, clock, new SeededRandom(seed), { ...NO_FAULTS, ...plan }) };
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (isKeepworkError(e) ? e.code : String(e)),
  );

describe('fault store', () => {
  it('unavailable on writes refuses them before they are sent; reads go through', async () => {
    const { inner, store } = faulty({ unavailable: 1, on: 'writes' });
    await inner.put('k', text('v'));
    assert.equal(await codeOf(store.put('k', text('w'))), ErrorCode.StoreUnavailable);
    assert.equal(await codeOf(store.delete('k')), ErrorCode.StoreUnavailable);
    assert.deepEqual((await store.get('k'))?.body, text('v'), 'not written');
    assert.deepEqual((await store.list()).keys, ['k']);
    assert.equal(store.injected.unavailable, 2);
  });

  it('unavailable on reads refuses reads only', async () => {
    const { store } = faulty({ unavailable: 1, on: 'reads' });
    await store.put('k', text('v'));
    for (const read of [store.get('k'), store.head('k'), store.list()]) assert.equal(await codeOf(read), ErrorCode.StoreUnavailable);
  });

  it('cutFile refuses every request while the file exists; cutWritesFile every write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cut-'));
    try {
      const cutFile = join(dir, 'cut');
      const { inner, store } = faulty({ cutFile });
      await store.put('k', text('v'));
      writeFileSync(cutFile, '');
      for (const call of [store.get('k'), store.head('k'), store.list(), store.put('k', text('w')), store.delete('k')])
        assert.equal(await codeOf(call), ErrorCode.StoreUnavailable);
      assert.deepEqual((await inner.get('k'))?.body, text('v'), 'nothing written while cut');
      rmSync(cutFile);
      assert.deepEqual((await store.get('k'))?.body, text('v'));
      assert.equal(store.injected.cut, 5);
      assert.equal(parseFaultUrl(`fault+memory:?cutFile=${encodeURIComponent(cutFile)}`).plan.cutFile, cutFile);
      // cutWritesFile: writes refused, reads served
      const writes = faulty({ cutWritesFile: cutFile });
      await writes.store.put('k', text('v'));
      writeFileSync(cutFile, '');
      assert.equal(await codeOf(writes.store.put('k', text('w'))), ErrorCode.StoreUnavailable);
      assert.deepEqual((await writes.store.get('k'))?.body, text('v'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an ambiguous write is applied, then answered AMBIGUOUS_WRITE', async () => {
    const { inner, store } = faulty({ ambiguous: 1 });
    assert.equal(await codeOf(store.put('k', text('v'), { ifNoneMatch: '*' })), ErrorCode.AmbiguousWrite);
    assert.deepEqual((await inner.get('k'))?.body, text('v'));
  });

  it('a late write is answered at once and lands lateMs later, its condition checked when it lands', async () => {
    const { clock, inner, store } = faulty({ late: 1, lateMs: 1_000 });
    assert.equal(await codeOf(store.put('k', text('late'), { ifNoneMatch: '*' })), ErrorCode.AmbiguousWrite);
    assert.equal(await inner.get('k'), null, 'not yet');
    await inner.put('k', text('first'));
    await clock.advance(1_000);
    assert.deepEqual((await inner.get('k'))?.body, text('first'), 'the late create found the key taken');
    assert.equal(await codeOf(store.put('j', text('late'))), ErrorCode.AmbiguousWrite);
    const putsBefore = inner.counts.put;
    let closed = false;
    const closing = store.close().then(() => (closed = true));
    await clock.advance(999);
    assert.equal(closed, false, 'close waits for the late write');
    await clock.advance(1);
    await closing;
    assert.equal(inner.counts.put, putsBefore + 1, 'it landed before the inner store closed');
  });

  it('stalled writes wait while reads answer at once', async () => {
    const { clock, inner, store } = faulty({ stallWritesMs: 5_000 });
    await inner.put('k', text('v'));
    let written = false;
    const put = store.put('k', text('w')).then(() => (written = true));
    assert.deepEqual((await store.get('k'))?.body, text('v'));
    await clock.advance(4_999);
    assert.equal(written, false);
    await clock.advance(1);
    await put;
    assert.deepEqual((await inner.get('k'))?.body, text('w'));
  });

  it('faults only inside the burst windows', async () => {
    const { clock, store } = faulty({ unavailable: 1, burstEveryMs: 10_000, burstMs: 3_000 });
    const at = async (ms: number) => {
      await clock.runUntil(ms);
      return codeOf(store.get('k'));
    };
    assert.deepEqual(
      [await at(0), await at(2_999), await at(3_000), await at(9_999), await at(10_000), await at(13_500)],
      [ErrorCode.StoreUnavailable, ErrorCode.StoreUnavailable, 'ok', 'ok', ErrorCode.StoreUnavailable, 'ok'],
    );
  });

  it('the same seed draws the same faults; another seed others', async () => {
    const run = async (seed: number) => {
      const { store } = faulty({ unavailable: 0.3, ambiguous: 0.3 }, seed);
      const out: string[] = [];
      for (let i = 0; i < 60; i++) out.push(await codeOf(store.put(`k${i}`, text('v'))));
      return out;
    };
    const a = await run(7);
    assert.deepEqual(await run(7), a);
    assert.notDeepEqual(await run(8), a);
    assert.ok(a.includes('ok') && a.includes(ErrorCode.StoreUnavailable) && a.includes(ErrorCode.AmbiguousWrite));
  });

  it('slowdown throttles that share of writes, only in its first slowdownMs, with the Retry-After; reads go through', async () => {
    const { clock, inner, store } = faulty({ slowdown: 1, slowdownMs: 10_000, retryAfterMs: 2_000 });
    const refused = await store.put('k', text('v')).catch((e: unknown) => e);
    assert.deepEqual(throttleOf(refused), { retryAfterMs: 2_000 });
    assert.equal(await inner.get('k'), null, 'not applied');
    assert.equal(await store.get('k'), null, 'reads are not throttled');
    await clock.advance(10_000);
    await store.put('k', text('v'));
    assert.deepEqual([store.injected.slowdown, store.sent], [1, 3]);
  });

  it('slowdownInFlightMax throttles every write that arrives with that many in flight', async () => {
    const clock = new SimClock(0);
    const plan = { ...NO_FAULTS, slowdownInFlightMax: 2 };
    const store = new FaultStore(new LatencyStore(new MemoryStore({ clock }), clock, 30), clock, new SeededRandom(1), plan);
    const outcomes = Promise.all(['a', 'b', 'c'].map((k) => codeOf(store.put(k, text(k)))));
    await clock.advance(30);
    assert.deepEqual(await outcomes, ['ok', 'ok', ErrorCode.StoreUnavailable]);
    const later = codeOf(store.put('d', text('d')));
    await clock.advance(30);
    assert.equal(await later, 'ok', 'once the first two landed');
  });

  it('holdWritesFile holds every write outside the index until the file is gone; conditions are checked when it lands', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-hold-'));
    try {
      const holdWritesFile = join(dir, 'hold');
      const { clock, inner, store } = faulty({ holdWritesFile });
      await store.put('state/k', text('v'));
      writeFileSync(holdWritesFile, '');
      const landed: string[] = [];
      const put = store.put('state/k', text('w')).then(() => landed.push('put'));
      const create = codeOf(store.put('holds/h', text('mine'), { ifNoneMatch: '*' })).then((c) => (landed.push('create'), c));
      await store.put('alarms/t/1', new Uint8Array(0)); // the index goes through
      await store.deleteMany(['alarms/t/1']);
      assert.deepEqual((await store.get('state/k'))?.body, text('v'), 'reads are served');
      await inner.put('holds/h', text('theirs'));
      await clock.advance(10_000);
      assert.deepEqual(landed, [], 'held while the file exists');
      assert.deepEqual((await inner.get('state/k'))?.body, text('v'));
      rmSync(holdWritesFile);
      await clock.advance(50);
      await put;
      assert.equal(await create, ErrorCode.PreconditionFailed, 'the held create found the key taken when it landed');
      assert.deepEqual((await inner.get('state/k'))?.body, text('w'));
      assert.equal(store.injected.held, 2);
      assert.equal(parseFaultUrl(`fault+memory:?holdWritesFile=${encodeURIComponent(holdWritesFile)}`).plan.holdWritesFile, holdWritesFile);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('calmFile turns the seeded faults off while the file exists; the switches still apply', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-calm-'));
    try {
      const calmFile = join(dir, 'calm');
      const cutWritesFile = join(dir, 'cut');
      const { store } = faulty({ unavailable: 1, on: 'all', ambiguous: 1, stallWritesMs: 0, calmFile, cutWritesFile });
      assert.equal(await codeOf(store.get('k')), ErrorCode.StoreUnavailable);
      writeFileSync(calmFile, '');
      assert.equal(await codeOf(store.put('k', text('v'))), 'ok', 'no refusal, no lost answer');
      assert.deepEqual((await store.get('k'))?.body, text('v'));
      writeFileSync(cutWritesFile, '');
      assert.equal(await codeOf(store.put('k', text('w'))), ErrorCode.StoreUnavailable, 'a cut is no seeded fault');
      rmSync(cutWritesFile);
      rmSync(calmFile);
      assert.equal(await codeOf(store.get('k')), ErrorCode.StoreUnavailable);
      assert.equal(parseFaultUrl(`fault+memory:?calmFile=${encodeURIComponent(calmFile)}`).plan.calmFile, calmFile);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('failingFsync fails fsyncs with EIO while its file exists, and makes them otherwise', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-fsync-'));
    try {
      const file = join(dir, 'fail');
      const made: string[] = [];
      const disk = { fsyncFile: async () => void made.push('file'), fsyncFolder: async (d: string) => void made.push(d) };
      const d = failingFsync(file, disk);
      await d.fsyncFile(3);
      await d.fsyncFolder('/x');
      writeFileSync(file, '');
      await assert.rejects(d.fsyncFile(3), (e: NodeJS.ErrnoException) => e.code === 'EIO');
      await assert.rejects(d.fsyncFolder('/x'), (e: NodeJS.ErrnoException) => e.code === 'EIO');
      assert.deepEqual(made, ['file', '/x']);
      assert.equal(d.failed, 2);
      assert.equal(parseFaultUrl(`fault+file:///tmp/b?fsyncFailFile=${encodeURIComponent(file)}`).plan.fsyncFailFile, file);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a folder bucket behind fault+ with fsyncFailFile refuses puts while the file exists; nothing is acknowledged', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-fsync-'));
    try {
      const file = join(dir, 'fail');
      if (fsyncDoesNothing(dir)) return t.skip('tmpdir is in memory: the folder bucket makes no fsync there');
      const store = openStore(`fault+file://${join(dir, 'bucket')}?fsyncFailFile=${encodeURIComponent(file)}`);
      try {
        await store.put('state/a', text('v'));
        writeFileSync(file, '');
        const code = await codeOf(store.put('state/b', text('w')));
        assert.ok(code === ErrorCode.StoreUnavailable || code === ErrorCode.AmbiguousWrite, code);
        assert.equal(await store.get('state/b'), null, 'a put whose file fsync failed is not there');
        rmSync(file);
        await store.put('state/b', text('w'));
        assert.deepEqual((await store.get('state/b'))?.body, text('w'));
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is opened from a fault+ URL; the inner URL keeps its own query; bad values are BAD_CONFIG', async () => {
    const parsed = parseFaultUrl('fault+latency+memory:?ms=5&seed=3&unavailable=0.3&on=writes&burstEveryMs=20000&burstMs=10000');
    assert.equal(parsed.inner, 'latency+memory:?ms=5');
    assert.equal(parsed.seed, 3);
    assert.deepEqual(parsed.plan, { ...NO_FAULTS, unavailable: 0.3, on: 'writes', burstEveryMs: 20_000, burstMs: 10_000 });
    const slow = parseFaultUrl('fault+file:///tmp/b?slowdown=0.3&slowdownMs=10000&slowdownInFlightMax=8&retryAfterMs=1000');
    assert.equal(slow.inner, 'file:///tmp/b');
    assert.deepEqual(slow.plan, { ...NO_FAULTS, slowdown: 0.3, slowdownMs: 10_000, slowdownInFlightMax: 8, retryAfterMs: 1_000 });
    const store = openStore('fault+memory:?unavailable=1&seed=1');
    assert.match(store.description, /^fault\+memory/);
    assert.equal(await codeOf(store.get('k')), ErrorCode.StoreUnavailable);
    await store.close();
    for (const bad of [
      'slowdown=1.5',
      'slowdownMs=-1',
      'unavailable=2',
      'on=sometimes',
      'late=x',
      'burstEveryMs=1000',
      'burstEveryMs=1000&burstMs=2000',
      'lateMs=-1',
    ])
      assert.throws(
        () => parseFaultUrl(`fault+memory:?${bad}`),
        (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig),
        bad,
      );
  });
});

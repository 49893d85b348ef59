/**
 * The ObjectStore conformance suite: every implementation (memory, fs, s3) runs these same cases
 * against a fresh namespace each, so they cannot drift apart. See src/store/types.ts for the
 * contract being checked.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { etagOf } from '../../src/store/etag.js';
import type { ObjectStore } from '../../src/store/types.js';
import type { OpenFixture, StoreFixture } from './fixture.js';
import { allKeys } from '../helpers/all-keys.js';
import { str, text } from '../helpers/bytes.js';

async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(isKeepworkError(e), `expected a keepwork error with code ${code}, got ${String(e)}`);
    assert.equal((e as { code: string }).code, code);
    return true;
  });
}

/** Keys in UTF-8 byte order, including non-ASCII, astral characters and keys that prefix others. */
const ORDERED_KEYS = [
  'a',
  'a-b',
  'a/b',
  'a/b/c',
  'a/b0',
  'a0',
  'b',
  'caf\u00e9',
  'z',
  '\uff61half',
  '\u4e2d\u6587',
  '\ud83d\ude00smile',
].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));

type Case = (store: ObjectStore, fixture: Pick<StoreFixture, 'reopen' | 'ambiguousLosers'>) => Promise<void>;

/** Exactly one fulfilled; every loser PRECONDITION_FAILED (or AMBIGUOUS_WRITE where the store may say so). */
function soleWinner(results: PromiseSettledResult<number>[], f: Pick<StoreFixture, 'ambiguousLosers'>): number {
  const winners = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  assert.equal(winners.length, 1, `winners: ${winners}`);
  const allowed: string[] = [ErrorCode.PreconditionFailed, ...(f.ambiguousLosers ? [ErrorCode.AmbiguousWrite] : [])];
  for (const r of results) {
    if (r.status === 'rejected') assert.ok(allowed.includes((r.reason as { code?: string }).code ?? ''), String(r.reason));
  }
  return winners[0]!;
}

const CASES: Record<string, Case> = {
  'get of a missing key is null': async (s) => {
    assert.equal(await s.get('missing/key'), null);
  },
  'head of a missing key is null': async (s) => {
    assert.equal(await s.head('missing/key'), null);
  },
  'put then get returns the body and the etag put returned': async (s) => {
    const { etag } = await s.put('k/one', text('hello'));
    const got = await s.get('k/one');
    assert.ok(got);
    assert.equal(str(got.body), 'hello');
    assert.equal(got.etag, etag);
    assert.match(etag, /^[^"]+$/, 'etags are unquoted');
  },
  'head returns the etag and the size': async (s) => {
    const { etag } = await s.put('k/h', text('12345'));
    assert.deepEqual(await s.head('k/h'), { etag, size: 5 });
  },
  'an unconditional put replaces the body and changes the etag': async (s) => {
    const a = await s.put('k', text('first'));
    const b = await s.put('k', text('second'));
    assert.notEqual(a.etag, b.etag);
    assert.equal(str((await s.get('k'))!.body), 'second');
  },
  'equal bodies have equal etags, different bodies different ones': async (s) => {
    const a = await s.put('e/1', text('same'));
    const b = await s.put('e/2', text('same'));
    const c = await s.put('e/3', text('other'));
    assert.equal(a.etag, b.etag);
    assert.notEqual(a.etag, c.etag);
  },
  'empty, binary and 1 MiB bodies round-trip byte for byte': async (s) => {
    const bin = Uint8Array.from({ length: 256 }, (_, i) => i);
    const big = Uint8Array.from({ length: 1 << 20 }, (_, i) => (i * 31 + 7) & 0xff);
    for (const [k, body] of [
      ['b/empty', new Uint8Array(0)],
      ['b/bin', bin],
      ['b/big', big],
    ] as const) {
      await s.put(k, body);
      const got = await s.get(k);
      assert.ok(got, k);
      assert.equal(Buffer.compare(got.body, body), 0, k);
      assert.equal((await s.head(k))!.size, body.byteLength);
    }
  },
  'changing the caller buffer after put does not change the object': async (s) => {
    const body = text('abc');
    await s.put('iso', body);
    body[0] = 0x7a;
    assert.equal(str((await s.get('iso'))!.body), 'abc');
  },
  'delete removes the object; deleting a missing key succeeds': async (s) => {
    await s.put('d/x', text('x'));
    await s.delete('d/x');
    assert.equal(await s.get('d/x'), null);
    await s.delete('d/x');
    await s.delete('d/never');
  },
  'deleteMany removes the listed keys, ignores missing ones, keeps the rest': async (s) => {
    for (const k of ['m/1', 'm/2', 'm/3']) await s.put(k, text(k));
    await s.deleteMany(['m/1', 'm/3', 'm/missing']);
    await s.deleteMany([]);
    assert.deepEqual(await allKeys(s, { prefix: 'm/' }), ['m/2']);
  },
  'deleteMany takes more than 1,000 keys (several requests on S3), duplicates, and keys in many folders': async (s) => {
    const keys = Array.from({ length: 1_050 }, (_, i) => `dm/${i % 7}/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 50) await Promise.all(keys.slice(i, i + 50).map((k) => s.put(k, new Uint8Array(0))));
    await s.put('dm/keep', text('keep'));
    await s.put('dm/0', text('object and folder'));
    await s.deleteMany([...keys, keys[0]!, keys[1_049]!]);
    assert.deepEqual(await allKeys(s, { prefix: 'dm/' }), ['dm/0', 'dm/keep']);
    await s.deleteMany(['dm/0', 'dm/0']);
    assert.deepEqual(await allKeys(s, { prefix: 'dm/' }), ['dm/keep']);
  },
  'a key can be an object and the prefix of other objects': async (s) => {
    await s.put('p', text('parent'));
    await s.put('p/child', text('child'));
    assert.equal(str((await s.get('p'))!.body), 'parent');
    assert.equal(str((await s.get('p/child'))!.body), 'child');
    await s.delete('p');
    assert.equal(str((await s.get('p/child'))!.body), 'child');
    assert.deepEqual(await allKeys(s), ['p/child']);
  },
  'If-None-Match creates an absent object': async (s) => {
    const { etag } = await s.put('c/new', text('v1'), { ifNoneMatch: '*' });
    assert.equal((await s.get('c/new'))!.etag, etag);
  },
  'If-None-Match on an existing object fails and leaves it unchanged': async (s) => {
    const { etag } = await s.put('c/x', text('original'));
    await rejectsWith(s.put('c/x', text('intruder'), { ifNoneMatch: '*' }), ErrorCode.PreconditionFailed);
    const got = await s.get('c/x');
    assert.equal(str(got!.body), 'original');
    assert.equal(got!.etag, etag);
  },
  'If-None-Match succeeds again after the object was deleted': async (s) => {
    await s.put('c/y', text('1'), { ifNoneMatch: '*' });
    await s.delete('c/y');
    await s.put('c/y', text('2'), { ifNoneMatch: '*' });
    assert.equal(str((await s.get('c/y'))!.body), '2');
  },
  'If-Match with the current etag replaces the object': async (s) => {
    const a = await s.put('cas/1', text('a'));
    const b = await s.put('cas/1', text('b'), { ifMatch: a.etag });
    assert.equal(b.etag, etagOf(text('b')));
    assert.equal(str((await s.get('cas/1'))!.body), 'b');
  },
  'If-Match with a stale etag fails and leaves the object unchanged': async (s) => {
    const a = await s.put('cas/2', text('a'));
    await s.put('cas/2', text('b'), { ifMatch: a.etag });
    await rejectsWith(s.put('cas/2', text('c'), { ifMatch: a.etag }), ErrorCode.PreconditionFailed);
    assert.equal(str((await s.get('cas/2'))!.body), 'b');
  },
  'If-Match on a missing key fails and creates nothing': async (s) => {
    await rejectsWith(s.put('cas/none', text('x'), { ifMatch: etagOf(text('x')) }), ErrorCode.PreconditionFailed);
    assert.equal(await s.get('cas/none'), null);
  },
  'conditional-create race: of 16 writers exactly one wins, the object holds its body': async (s, f) => {
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => s.put('race/create', text(`writer-${i}`), { ifNoneMatch: '*' }).then(() => i)),
    );
    const winner = soleWinner(results, f);
    assert.equal(str((await s.get('race/create'))!.body), `writer-${winner}`);
  },
  'compare-and-swap race: of 16 writers on one etag exactly one wins': async (s, f) => {
    const { etag } = await s.put('race/cas', text('base'));
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => s.put('race/cas', text(`writer-${i}`), { ifMatch: etag }).then(() => i)),
    );
    const winner = soleWinner(results, f);
    assert.equal(str((await s.get('race/cas'))!.body), `writer-${winner}`);
  },
  'compare-and-swap log: concurrent read-modify-writes lose no reported success and apply none twice': async (s, f) => {
    // The object is a log of writer tags; each successful CAS appends one. Tags are unique, so an
    // ambiguous outcome is settled by reading the log back (the way callers are meant to).
    await s.put('race/log', text('[]'));
    const other = await f.reopen();
    const succeeded: string[] = [];
    const append = async (store: ObjectStore, tag: string) => {
      for (let attempt = 0; attempt < 200; attempt++) {
        const cur = await store.get('race/log');
        const log = JSON.parse(str(cur!.body)) as string[];
        if (log.includes(tag)) return void succeeded.push(tag); // an earlier ambiguous attempt landed
        try {
          await store.put('race/log', text(JSON.stringify([...log, tag])), { ifMatch: cur!.etag });
          return void succeeded.push(tag);
        } catch (e) {
          if (!isKeepworkError(e, ErrorCode.PreconditionFailed) && !(f.ambiguousLosers && isKeepworkError(e, ErrorCode.AmbiguousWrite)))
            throw e;
        }
      }
      throw new Error(`append of ${tag} starved`);
    };
    try {
      await Promise.all(
        Array.from({ length: 6 }, async (_, w) => {
          for (let n = 0; n < 4; n++) await append(w % 2 ? other : s, `w${w}-${n}`);
        }),
      );
      const final = JSON.parse(str((await s.get('race/log'))!.body)) as string[];
      assert.equal(new Set(final).size, final.length, 'no write applied twice');
      assert.deepEqual([...final].sort(), [...succeeded].sort(), 'exactly the reported successes are in the log');
      assert.equal(final.length, 24);
    } finally {
      await other.close();
    }
  },
  'a second client on the same bucket sees writes and loses races like the first': async (s, f) => {
    const other = await f.reopen();
    try {
      await s.put('shared/k', text('from-first'));
      assert.equal(str((await other.get('shared/k'))!.body), 'from-first');
      await rejectsWith(other.put('shared/k', text('x'), { ifNoneMatch: '*' }), ErrorCode.PreconditionFailed);
      await other.delete('shared/k');
      assert.equal(await s.head('shared/k'), null);
    } finally {
      await other.close();
    }
  },
  'listing is in UTF-8 byte order, also for non-ASCII keys and keys that prefix others': async (s) => {
    for (const k of [...ORDERED_KEYS].reverse()) await s.put(k, text(k));
    assert.deepEqual(await allKeys(s), ORDERED_KEYS);
  },
  'listing by prefix, ending mid-segment or at a folder': async (s) => {
    for (const k of ORDERED_KEYS) await s.put(k, text(k));
    assert.deepEqual(await allKeys(s, { prefix: 'a/' }), ['a/b', 'a/b/c', 'a/b0']);
    assert.deepEqual(await allKeys(s, { prefix: 'a/b' }), ['a/b', 'a/b/c', 'a/b0']);
    assert.deepEqual(
      await allKeys(s, { prefix: 'a' }),
      ORDERED_KEYS.filter((k) => k.startsWith('a')),
    );
    assert.deepEqual(await allKeys(s, { prefix: 'nothing-here/' }), []);
  },
  'startAfter an existing key lists only what follows it': async (s) => {
    for (const k of ORDERED_KEYS) await s.put(k, text(k));
    const page = await s.list({ startAfter: 'a/b' });
    assert.deepEqual(page.keys, ORDERED_KEYS.slice(ORDERED_KEYS.indexOf('a/b') + 1));
  },
  'startAfter a missing key lists from where it would be': async (s) => {
    for (const k of ORDERED_KEYS) await s.put(k, text(k));
    const page = await s.list({ startAfter: 'a/a' });
    assert.deepEqual(page.keys, ORDERED_KEYS.slice(ORDERED_KEYS.indexOf('a/b')));
    const withPrefix = await s.list({ prefix: 'a/', startAfter: 'a/b/' });
    assert.deepEqual(withPrefix.keys, ['a/b/c', 'a/b0']);
  },
  'paging with maxKeys returns every key once, in order, and ends without a continuation': async (s) => {
    const keys = Array.from({ length: 23 }, (_, i) => `pg/${String(i).padStart(3, '0')}`);
    await Promise.all(keys.map((k) => s.put(k, text(k))));
    const seen: string[] = [];
    let continuation: string | undefined;
    let pages = 0;
    do {
      const page = await s.list({ prefix: 'pg/', maxKeys: 5, continuation });
      assert.ok(page.keys.length <= 5);
      seen.push(...page.keys);
      continuation = page.continuation;
      pages++;
    } while (continuation !== undefined && pages < 20);
    assert.deepEqual(seen, keys);
    assert.equal(pages, 5);
  },
  'paging combines prefix, startAfter and maxKeys': async (s) => {
    const keys = Array.from({ length: 12 }, (_, i) => `pq/${String(i).padStart(2, '0')}`);
    await Promise.all([...keys, 'pp/0', 'pr/0'].map((k) => s.put(k, text(k))));
    const first = await s.list({ prefix: 'pq/', startAfter: 'pq/03', maxKeys: 4 });
    assert.deepEqual(first.keys, keys.slice(4, 8));
    assert.ok(first.continuation);
    const second = await s.list({ prefix: 'pq/', startAfter: 'pq/03', maxKeys: 4, continuation: first.continuation });
    assert.deepEqual(second.keys, keys.slice(8, 12));
  },
  'a listing exactly one page long has no continuation, or an empty next page': async (s) => {
    await Promise.all(['x/1', 'x/2', 'x/3'].map((k) => s.put(k, text(k))));
    const page = await s.list({ prefix: 'x/', maxKeys: 3 });
    assert.deepEqual(page.keys, ['x/1', 'x/2', 'x/3']);
    if (page.continuation !== undefined) {
      const next = await s.list({ prefix: 'x/', maxKeys: 3, continuation: page.continuation });
      assert.deepEqual(next.keys, []);
    }
  },
  'bad keys are refused with BAD_KEY before anything is written': async (s) => {
    const bad = ['', '/abs', 'a//b', 'a/../b', '..', 'a/./b', 'nul\u0000x', 'trailing/', 'lone\ud800', 'x'.repeat(1025)];
    for (const k of bad) {
      await rejectsWith(s.put(k, text('x')), ErrorCode.BadKey);
      await rejectsWith(s.get(k), ErrorCode.BadKey);
      await rejectsWith(s.delete(k), ErrorCode.BadKey);
    }
    await rejectsWith(s.deleteMany(['ok', 'a//b']), ErrorCode.BadKey);
    assert.deepEqual(await allKeys(s), []);
  },
  'a maxKeys above 1,000: every key once, in order, in pages of at most maxKeys (S3: of at most 1,000)': async (s) => {
    const want = Array.from({ length: 1_050 }, (_, i) => `big/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < want.length; i += 50) await Promise.all(want.slice(i, i + 50).map((k) => s.put(k, text('x'))));
    const got: string[] = [];
    let continuation: string | undefined;
    let pages = 0;
    do {
      const page = await s.list({ prefix: 'big/', maxKeys: 2_000, continuation });
      assert.ok(page.keys.length <= 1_000 || page.keys.length === want.length, `a page of ${page.keys.length}`);
      got.push(...page.keys);
      continuation = page.continuation;
      pages++;
    } while (continuation !== undefined && pages < 5);
    assert.deepEqual(got, want);
  },
  'bad list options are refused with BAD_REQUEST': async (s) => {
    await rejectsWith(s.list({ maxKeys: 0 }), ErrorCode.BadRequest);
    await rejectsWith(s.list({ maxKeys: 10_001 }), ErrorCode.BadRequest);
    await rejectsWith(s.list({ prefix: 'a//' }), ErrorCode.BadKey);
  },
};

export function runConformance(label: string, open: OpenFixture): void {
  describe(`ObjectStore conformance: ${label}`, () => {
    for (const [name, run] of Object.entries(CASES)) {
      it(name, async () => {
        const fixture = await open();
        try {
          await run(fixture.store, fixture);
        } finally {
          await fixture.cleanup();
        }
      });
    }
  });
}

export const CONFORMANCE_CASE_COUNT = Object.keys(CASES).length;

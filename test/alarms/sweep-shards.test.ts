/**
 * The sweep's walks of a sharded index (docs/alarm-index.md "A sharded index"): a node lists each
 * shard it owns and the unsharded layout once per sweep, walks one other shard folder every
 * otherShardWalkMs, or at once again after a walk that found work (round robin), and takes from
 * it only what is anyone's (three margins overdue); a node with one shard steps past sharded keys
 * to the unsharded layout, then walks the sharded area too, until it finds it empty.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress, type ActorAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { resolveOptions, type KeepworkOptions } from '../../src/core/config.js';
import { silentLogger } from '../../src/core/logger.js';
import { SeededRandom } from '../../src/core/random.js';
import { ClockScheduler } from '../../src/core/clock-scheduler.js';
import { entryKey, shardOf, shardPrefix, shardedAreaPrefix, tenantPrefix } from '../../src/alarms/keys.js';
import { ownedShards } from '../../src/alarms/shard-owners.js';
import { SAFE_RULES, type ProtocolRules } from '../../src/alarms/rules.js';
import { FIRST_LIST_KEYS, Sweeper, type SweepHost } from '../../src/alarms/sweep.js';
import { MemoryStore } from '../../src/store/memory.js';

const NOW = 1_900_000_000_000;

/** A sweeper of tenant `t` on n1 with `indexShards` S and `others` live; records what it offers and the prefixes it lists. */
function setup(indexShards: number, others: string[], options: KeepworkOptions = {}, rules: ProtocolRules = SAFE_RULES, seed = 1) {
  const clock = new SimClock(NOW);
  const store = new MemoryStore({ clock });
  const config = resolveOptions({ indexShards, deliveriesPerSweep: 1_000, anyonesDeliveriesPerSweep: 1_000, ...options });
  const offered: { address: ActorAddress; shard?: number }[] = [];
  const listed: string[] = [];
  store.setFaults((r) => (r.op === 'list' && listed.push(r.key), undefined));
  /** Every LIST's prefix and the keys it asked for. */
  const asks: { prefix: string; maxKeys: number | undefined }[] = [];
  const list = store.list.bind(store);
  store.list = (o) => (asks.push({ prefix: o?.prefix ?? '', maxKeys: o?.maxKeys }), list(o));
  const self = { nodeId: 'n1', tenants: null, classes: ['C'] };
  const host: SweepHost = {
    sweepNode: () => self,
    liveNodes: async () => [self, ...others.map((nodeId) => ({ nodeId, tenants: null, classes: ['C'] }))],
    isBusy: () => false,
    offerEntry: (address, _dueMs, _generation, shard) => (offered.push({ address, shard }), true),
    deliveryBacklog: () => 0,
    tenantsToSweep: async () => ['t'],
  };
  const seams = { store, clock, random: new SeededRandom(seed), config, log: silentLogger(), scheduler: new ClockScheduler(clock), rules };
  const sweeper = new Sweeper(seams, host);
  const margin = config.marginMs;
  /** An entry of actor t/C/<name>, `margins` margins (plus a second) overdue, in shard folder `shard` (undefined: unsharded). */
  const keys = new Map<string, string>();
  const add = (name: string, margins: number, shard?: number) => {
    const key = entryKey({
      address: parseAddress(`t/C/${name}`),
      dueMs: NOW - margins * margin - 1_000,
      tag: { generation: 1, nonce: 'ab' },
      shard,
    });
    keys.set(name, key);
    return store.put(key, new Uint8Array(0));
  };
  /** The entries of the actors with these names were delivered: their entries go. */
  const deliver = async (names: readonly string[]) => {
    for (const n of names) await store.delete(keys.get(n)!);
  };
  const names = () => offered.splice(0).map((o) => o.address.name);
  /** One sweep, `afterMs` after the last (the clock moved on). */
  const sweepAfter = async (afterMs: number) => {
    await clock.advance(afterMs);
    return sweeper.sweepTenant('t');
  };
  return { store, sweeper, add, deliver, names, listed, asks, offered, clock, config, sweepAfter };
}

/** The first actor name with prefix `p` whose shard under `count` is `shard`. */
function nameIn(p: string, shard: number, count: number): string {
  for (let i = 0; ; i++) if (shardOf(parseAddress(`t/C/${p}${i}`), count) === shard) return `${p}${i}`;
}

describe('the sweep of a sharded index', () => {
  const S = 8;
  const mine = ownedShards('t', S, ['n1', 'n2'], 'n1');
  const theirs = [...Array(S).keys()].filter((s) => !mine.includes(s));

  it('lists each shard it owns once a sweep, and the unsharded layout, and offers their entries one margin overdue', async () => {
    assert.ok(mine.length > 0 && theirs.length > 0, 'the rendezvous gives each node some shards');
    const s = setup(S, ['n2']);
    for (let shard = 0; shard < S; shard++) await s.add(nameIn(`m${shard}-`, shard, S), 1, shard);
    await s.add('u', 4); // unsharded, anyone's by now: still read by the walk of the unsharded layout
    await s.sweeper.sweepTenant('t');
    const ownLists = s.listed.filter((p) => mine.some((shard) => p === shardPrefix('t', shard)));
    assert.deepEqual(ownLists.sort(), mine.map((shard) => shardPrefix('t', shard)).sort(), 'one LIST per own shard');
    assert.equal(s.listed.filter((p) => theirs.some((shard) => p === shardPrefix('t', shard))).length, 0, 'no LIST of their folders');
    assert.equal(s.listed.filter((p) => p === tenantPrefix('t')).length, 1, 'one LIST of the unsharded layout');
    assert.equal(s.listed.filter((p) => p === shardedAreaPrefix('t')).length, 1, 'one LIST of the slow walk');
    const offered = s.names();
    for (const shard of mine) assert.ok(offered.includes(nameIn(`m${shard}-`, shard, S)), `own shard ${shard} delivered`);
    for (const shard of theirs) assert.ok(!offered.includes(nameIn(`m${shard}-`, shard, S)), `their shard ${shard}: one margin is theirs`);
    assert.ok(offered.includes('u'));
  });

  it('walks one other folder every otherShardWalkMs, round robin, taking only entries three margins overdue from another node’s', async () => {
    const s = setup(S, ['n2'], { otherShardWalkMs: 1 }); // a millisecond a walk: the entries' ages stay put
    for (const shard of theirs) {
      await s.add(nameIn(`old${shard}-`, shard, S), 3, shard); // anyone's
      await s.add(nameIn(`new${shard}-`, shard, S), 2, shard); // still n2's
    }
    const seen = new Set<string>();
    for (let sweep = 0; sweep < theirs.length; sweep++) {
      s.listed.length = 0;
      await s.sweepAfter(s.config.otherShardWalkMs);
      assert.equal(s.listed.filter((p) => p === shardedAreaPrefix('t')).length, 1, 'one LIST of another folder per walk');
      const offered = s.offered.splice(0);
      assert.equal(new Set(offered.map((o) => o.shard)).size, offered.length > 0 ? 1 : 0, 'one folder per sweep');
      for (const o of offered) seen.add(o.address.name);
    }
    assert.deepEqual([...seen].sort(), theirs.map((shard) => nameIn(`old${shard}-`, shard, S)).sort());
  });

  it('walks another folder once every otherShardWalkMs, not every sweep, while sweeps come sweepMinGapMs apart', async () => {
    const s = setup(S, ['n2']);
    for (const shard of mine) for (let i = 0; i < 5; i++) await s.add(nameIn(`m${shard}-${i}-`, shard, S), 1, shard);
    for (const shard of theirs) await s.add(nameIn(`t${shard}-`, shard, S), 1, shard); // n2's past the run's 20 s: nothing to take
    const walkedAt: number[] = [];
    for (let t = 0; t <= 2 * s.config.otherShardWalkMs; t += s.config.sweepMinGapMs) {
      s.listed.length = 0;
      await s.sweepAfter(t === 0 ? 0 : s.config.sweepMinGapMs);
      if (s.listed.includes(shardedAreaPrefix('t'))) walkedAt.push(t);
      assert.ok(!s.names().some((n) => n.startsWith('t')), 'nothing of theirs is anyone’s yet');
    }
    assert.deepEqual(walkedAt, [0, s.config.otherShardWalkMs, 2 * s.config.otherShardWalkMs]);
  });

  it('walks again at the next sweep after a walk whose entries were taken, and slowly once one finds none', async () => {
    const s = setup(S, ['n2']);
    for (const shard of theirs) await s.add(nameIn(`a${shard}-`, shard, S), 3, shard); // anyone's
    const gap = s.config.sweepMinGapMs;
    for (const shard of theirs) {
      s.listed.length = 0;
      await s.sweepAfter(gap);
      assert.ok(s.listed.includes(shardedAreaPrefix('t')), `the walk of folder ${shard}`);
      const taken = s.names();
      assert.deepEqual(taken, [nameIn(`a${shard}-`, shard, S)]);
      await s.deliver(taken);
    }
    await s.sweepAfter(gap); // round the folders again: none left to take
    s.listed.length = 0;
    await s.sweepAfter(gap);
    assert.ok(!s.listed.includes(shardedAreaPrefix('t')), 'a walk that found nothing: the next waits otherShardWalkMs');
  });

  it('with a backlog of its own, helps at the slow cadence: a walk whose anyone’s entries it took is not repeated at once', async () => {
    const s = setup(S, ['n2'], { deliveriesPerSweep: 4, anyonesDeliveriesPerSweep: 1 });
    for (const shard of mine) for (let i = 0; i < 150; i++) await s.add(nameIn(`m${shard}-${i}-`, shard, S), 1, shard);
    for (const shard of theirs) for (let i = 0; i < 3; i++) await s.add(nameIn(`a${shard}-${i}-`, shard, S), 3, shard); // anyone's
    const walkedAt: number[] = [];
    let helped = 0;
    const gap = s.config.sweepMinGapMs;
    for (let t = 0; t <= 3 * s.config.otherShardWalkMs; t += gap) {
      s.listed.length = 0;
      await s.sweepAfter(t === 0 ? 0 : gap);
      if (s.listed.includes(shardedAreaPrefix('t'))) walkedAt.push(t);
      const taken = s.names();
      assert.ok(
        taken.some((n) => n.startsWith('m')),
        `own entries left at ${t}: the backlog lasts the test`,
      );
      helped += taken.filter((n) => n.startsWith('a')).length;
      await s.deliver(taken);
    }
    assert.ok(helped > 0, 'it took anyone’s entries of the folders it walked');
    assert.deepEqual(
      walkedAt,
      [0, 1, 2, 3].map((k) => k * s.config.otherShardWalkMs),
    );
  });

  it('starts the walk of other folders past the folders it owns next in line: no walk is spent on one of its own', async () => {
    assert.ok(mine.includes(0), 'the first folder is this node’s (the rendezvous of n1 and n2 over 8 shards)');
    const s = setup(S, ['n2']);
    for (let shard = 0; shard < S; shard++) await s.add(nameIn(`a${shard}-`, shard, S), 3, shard);
    await s.sweeper.sweepTenant('t');
    assert.ok(s.names().includes(nameIn(`a${theirs[0]}-`, theirs[0]!, S)), `the first walk lists folder ${theirs[0]}, not folder 0`);
  });

  it('a walk the plan left wholly behind (another walk filled the cap) stays where it is: no sweep ends with own entries due behind a cursor', async () => {
    const s = setup(2, [], { deliveriesPerSweep: 4, anyonesDeliveriesPerSweep: 0, sweepPageEntries: 12 });
    const unsharded = Array.from({ length: 6 }, (_, i) => `u${i}`);
    const inShard = Array.from({ length: 6 }, (_, i) => nameIn(`b${i}-`, 0, 2));
    for (const name of unsharded) await s.add(name, 1); // all due at the same time: the unsharded walk's come first
    for (const name of inShard) await s.add(name, 1, 0);
    const left = new Set([...unsharded, ...inShard]);
    for (let sweep = 0; sweep < 6 && left.size > 0; sweep++) {
      const r = await s.sweeper.sweepTenant('t');
      const offered = s.names();
      assert.ok(offered.length > 0 && offered.length <= 4, `sweep ${sweep}: within the cap`);
      for (const n of offered) left.delete(n);
      await s.deliver(offered);
      assert.ok(
        r.full || left.size === 0,
        `sweep ${sweep} ended not full with ${[...left].join(', ')} due: the next would wait alarmSweepMs`,
      );
    }
    assert.equal(left.size, 0);
  });

  it('drains its own shards reading each entry once: each sweep reads the delivery cap, no more', async () => {
    const cap = 10;
    const s = setup(S, ['n2'], { deliveriesPerSweep: cap, anyonesDeliveriesPerSweep: 2 });
    const names: string[] = [];
    for (const shard of mine)
      for (let i = 0; i < 3 * cap; i++) {
        names.push(nameIn(`m${shard}-${i}-`, shard, S));
        await s.add(names.at(-1)!, 1, shard);
      }
    let read = 0;
    const left = new Set(names);
    for (let sweep = 0; sweep < 100 && left.size > 0; sweep++) {
      const r = await s.sweepAfter(s.config.sweepMinGapMs);
      assert.ok(r.read <= cap, `sweep ${sweep} read ${r.read}`);
      read += r.read;
      const offered = s.names();
      for (const n of offered) left.delete(n);
      await s.deliver(offered);
    }
    assert.equal(left.size, 0, 'drained');
    assert.equal(read, names.length, 'each entry read once');
  });

  it('walks a block due at one millisecond from a drawn entry, then the entries before it, then the later ones: each once', async () => {
    const starts = new Set<string>();
    for (let seed = 1; seed <= 6; seed++) {
      const s = setup(2, [], { deliveriesPerSweep: 4, anyonesDeliveriesPerSweep: 0 }, SAFE_RULES, seed);
      const block = Array.from({ length: 40 }, (_, i) => nameIn(`d${i}-`, 0, 2)).sort();
      const later = Array.from({ length: 5 }, (_, i) => nameIn(`l${i}-`, 0, 2)).sort();
      for (const name of block) await s.add(name, 2, 0); // all due at one millisecond
      for (const name of later) await s.add(name, 1, 0); // a second margin later
      const order: string[] = [];
      let read = 0;
      for (let sweep = 0; sweep < 100 && order.length < block.length + later.length; sweep++) {
        const r = await s.sweepAfter(s.config.sweepMinGapMs);
        read += r.read;
        const offered = s.names();
        order.push(...offered);
        await s.deliver(offered);
      }
      const at = block.indexOf(order[0]!);
      starts.add(order[0]!);
      assert.deepEqual(
        order,
        [...block.slice(at), ...block.slice(0, at), ...later],
        `seed ${seed}: the block from its drawn start, then the later ones`,
      );
      assert.equal(read, block.length + later.length, `seed ${seed}: each entry read once`);
    }
    assert.ok(starts.size > 1, 'the start is drawn: not the same entry for every seed');
  });

  it('a rotated walk of a shard the node stops owning ends: owned again, it lists the folder afresh, not what it kept', async () => {
    const others: string[] = [];
    const s = setup(2, others, { deliveriesPerSweep: 4, anyonesDeliveriesPerSweep: 0 }, SAFE_RULES, 2);
    const shard = ownedShards('t', 2, ['n1', 'n2'], 'n2')[0]!; // the shard n1 loses when n2 is live
    const block = Array.from({ length: 40 }, (_, i) => nameIn(`d${i}-`, shard, 2)).sort();
    for (const name of block) await s.add(name, 2, shard);
    await s.sweepAfter(s.config.sweepMinGapMs);
    const first = s.names();
    assert.ok(first.length > 0 && first[0] !== block[0], 'the walk started at a drawn entry (seed 2)');
    others.push('n2');
    await s.sweepAfter(s.config.sweepMinGapMs);
    s.names();
    const left = block.filter((n) => !first.includes(n)).slice(0, 3); // n2 delivered the rest meanwhile
    await s.deliver(block.filter((n) => !left.includes(n)));
    others.length = 0;
    const offered: string[] = [];
    for (let sweep = 0; sweep < 20; sweep++) {
      await s.sweepAfter(s.config.sweepMinGapMs);
      offered.push(...s.names());
    }
    assert.deepEqual([...new Set(offered)].sort(), [...left].sort(), 'only the entries still listed');
  });

  it('an own shard’s walk that read through stays at its end for alarmSweepMs, then starts over and finds an entry listed behind it', async () => {
    for (const rules of [SAFE_RULES, { ...SAFE_RULES, startOverOwnShards: false }]) {
      const s = setup(S, ['n2'], {}, rules);
      const shard = mine[0]!;
      const inHand = [0, 1].map((i) => nameIn(`h${i}-`, shard, S));
      for (const n of inHand) await s.add(n, 1, shard);
      await s.sweepAfter(0);
      assert.deepEqual(s.names().sort(), [...inHand].sort());
      // Offered and not delivered yet (still in the index); then an entry due earlier than both is listed.
      const late = nameIn('late-', shard, S);
      await s.add(late, 2, shard);
      const gap = s.config.sweepMinGapMs;
      let foundAt: number | undefined;
      for (let t = gap; t <= 3 * s.config.alarmSweepMs && foundAt === undefined; t += gap) {
        await s.sweepAfter(gap);
        const offered = s.names();
        if (offered.includes(late)) foundAt = t;
        else assert.deepEqual(offered, [], `at ${t} ms: the entries in hand are not read again`);
      }
      if (rules === SAFE_RULES) {
        assert.ok(foundAt !== undefined, 'found once the walk started over');
        assert.ok(foundAt >= s.config.alarmSweepMs && foundAt <= s.config.alarmSweepMs + 2 * gap, `found at ${foundAt} ms`);
      } else assert.equal(foundAt, undefined, 'the unsafe variant noStartOver never finds it');
    }
  });

  it('asks a shard whose next entry is not overdue yet for one key, and for its share again once it is', async () => {
    const s = setup(S, ['n2']);
    const shard = mine[0]!;
    const ahead = nameIn('ahead-', shard, S);
    await s.add(ahead, -1, shard); // due a margin and a second from now: overdue two margins from now
    const askOf = () => s.asks.find((a) => a.prefix === shardPrefix('t', shard))?.maxKeys;
    await s.sweepAfter(0);
    assert.ok(askOf()! > 1, 'the first walk: its share');
    for (let sweep = 0; sweep < 3; sweep++) {
      s.asks.length = 0;
      await s.sweepAfter(s.config.sweepMinGapMs);
      assert.equal(askOf(), 1, 'the entry it stopped at is not overdue yet');
    }
    s.asks.length = 0;
    await s.sweepAfter(2 * s.config.marginMs);
    assert.ok(askOf()! > 1, 'now overdue: its share');
    assert.deepEqual(s.names(), [ahead]);
  });

  it('the walk of another folder lists one key while that folder’s earliest entry is not anyone’s, then a page of it', async () => {
    const s = setup(S, ['n2'], { otherShardWalkMs: 1 });
    const shard = theirs[0]!;
    const name = nameIn(`t${shard}-`, shard, S);
    await s.add(name, 2, shard); // n2's for a margin more
    const r = await s.sweepAfter(0);
    assert.deepEqual(
      s.asks.filter((a) => a.prefix === shardedAreaPrefix('t') || a.prefix === shardPrefix('t', shard)),
      [{ prefix: shardedAreaPrefix('t'), maxKeys: 1 }],
      'one key of the area, no page of the folder',
    );
    assert.equal(r.read, 0, 'nothing read past the anyone’s bound');
    await s.sweepAfter(s.config.marginMs); // the walk finds the end of the area; the next starts over
    s.asks.length = 0;
    await s.sweepAfter(1);
    assert.deepEqual(
      s.asks.filter((a) => a.prefix === shardedAreaPrefix('t') || a.prefix === shardPrefix('t', shard)),
      [
        { prefix: shardedAreaPrefix('t'), maxKeys: 1 },
        { prefix: shardPrefix('t', shard), maxKeys: FIRST_LIST_KEYS },
      ],
      'anyone’s now: one key of the area, then a page of the folder',
    );
    assert.deepEqual(s.names(), [name]);
  });

  it('a folder past its own shard count whose actors fall in a shard it owns is its own: taken one margin overdue', async () => {
    const s = setup(2, ['n2']); // the folders of 8 shards, written before S was lowered to 2
    const mine2 = ownedShards('t', 2, ['n1', 'n2'], 'n1');
    const owned8 = [...Array(S).keys()].filter((shard) => shard >= 2 && mine2.includes(shard & 1));
    assert.ok(owned8.length > 0);
    for (const shard of owned8) await s.add(nameIn(`w${shard}-`, shard, S), 1, shard);
    const seen = new Set<string>();
    for (let sweep = 0; sweep < S; sweep++) {
      await s.sweepAfter(s.config.otherShardWalkMs);
      for (const n of s.names()) seen.add(n);
    }
    assert.deepEqual([...seen].sort(), owned8.map((shard) => nameIn(`w${shard}-`, shard, S)).sort());
  });

  it('a node with one shard steps past sharded keys, walks the sharded area once it met one, and stops once it is empty', async () => {
    const s = setup(1, []);
    const sharded = nameIn('s', 5, S);
    await s.add(sharded, 1, 5);
    await s.add('u', 1);
    await s.sweeper.sweepTenant('t'); // the walk of the unsharded layout meets a sharded key and jumps past it
    assert.deepEqual(s.names(), ['u']);
    await s.sweeper.sweepTenant('t'); // and now walks the sharded area: the only live node, so its own by address
    assert.ok(s.names().includes(sharded));
    for (const key of (await s.store.list({ prefix: shardedAreaPrefix('t') })).keys) await s.store.delete(key);
    for (let sweep = 0; sweep < 2; sweep++) await s.sweepAfter(s.config.otherShardWalkMs); // the area found empty from its start
    s.listed.length = 0;
    await s.sweepAfter(s.config.otherShardWalkMs);
    assert.deepEqual(s.listed, [tenantPrefix('t')], 'only the unsharded layout is listed again');
  });
});

/**
 * The relay's staleListHold race (relay-faults.ts) against a fake relay: which requests it reads
 * as a stale removal's listing, an entry PUT and a link PUT, and the order it holds and releases
 * the nodes in (timers mocked).
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { RelayedRequest } from './bucket-relay.js';
import type { RelayFault } from './plan.js';
import { isEntryPut, isLinkPut, mergedSpans, staleListing, StaleListRace, type RaceTarget, type RelayControl } from './relay-faults.js';

const HEX = Buffer.from('a7i0').toString('hex'); // the name as index and state keys spell it
const DUE = 1796543458430;
const LISTING = `run-1/alarms/chaos/00${DUE}/ChaosLedger.t/${HEX}/`;

const req = (from: string, method: string, path: string, query = ''): RelayedRequest => ({
  from,
  method,
  path,
  query: new URLSearchParams(query),
});
const listing = (from: string, prefix = LISTING) => req(from, 'GET', '/bucket', `list-type=2&prefix=${encodeURIComponent(prefix)}`);
const entryPut = (from: string, due = DUE) =>
  req(from, 'PUT', `/bucket/run-1/alarms/chaos/00${due}/ChaosLedger.t/${HEX}/00000000000000000002-6f3f00000000`);
const linkPut = (from: string, hex = HEX) => req(from, 'PUT', `/bucket/run-1/state/chaos/ChaosLedger/${hex}/00000000000000000008`);
const renewal = (from: string) => req(from, 'PUT', '/bucket/run-1/nodes/n2');

const TARGET: RaceTarget = { tenant: 'chaos', className: 'ChaosLedger', name: 'a7i0', dueMs: DUE };
const FAULT: RelayFault = {
  at: 0,
  kind: 'staleListHold',
  forMs: 20_000,
  holdMs: 4_000,
  node: 1,
  slots: [7],
  calm: { from: -4_500, to: 35_000 },
};
const IPS = ['10.0.0.10', '10.0.0.11', '10.0.0.12'];

class FakeRelay implements RelayControl {
  readonly events: string[] = [];
  private fn: ((r: RelayedRequest) => void) | undefined;
  watch(fn: (r: RelayedRequest) => void): void {
    this.fn = fn;
  }
  hold(ip: string): void {
    this.events.push(`hold n${IPS.indexOf(ip)}`);
  }
  release(ip: string): void {
    this.events.push(`release n${IPS.indexOf(ip)}`);
  }
  send(r: RelayedRequest): void {
    this.fn!(r);
  }
}

/** A race on a fake relay whose re-arm goes through `armVia` (null: no node can). */
function race(armVia: number | null) {
  const relay = new FakeRelay();
  const armed: [RaceTarget, number][] = [];
  const raced: number[][] = [];
  const r = new StaleListRace(
    relay,
    (n) => IPS[n]!,
    (ip) => (IPS.includes(ip) ? IPS.indexOf(ip) : undefined),
    {
      eligible: (t) => t.name !== 'a9i0',
      arm: (t, held) => {
        armed.push([t, held]);
        relay.events.push(armVia === null ? 'no node to arm' : `arm via n${armVia}`);
        return armVia ?? undefined;
      },
      raced: (_t, held, via) => raced.push([held, via]),
      log: () => undefined,
    },
    { armAfterMs: 3_000, maxHeldMs: 9_000 },
  );
  return { relay, r, armed, raced };
}

describe('relay faults: reading the requests', () => {
  it('tells a stale removal listing, an entry PUT and a link PUT of the actor from the rest', () => {
    assert.deepEqual(staleListing(listing(IPS[0]!)), TARGET);
    assert.equal(staleListing(listing(IPS[0]!, 'run-1/alarms/')), undefined, 'a sweep lists the whole index');
    assert.equal(staleListing(listing(IPS[0]!, 'run-1/alarms/chaos/')), undefined);
    assert.equal(staleListing(req(IPS[0]!, 'GET', '/bucket', 'prefix=run-1/state/chaos/ChaosLedger/61/')), undefined);
    assert.equal(isEntryPut(entryPut(IPS[0]!), TARGET), true);
    assert.equal(isEntryPut(entryPut(IPS[0]!, DUE + 1), TARGET), false, 'another time');
    assert.equal(isEntryPut(linkPut(IPS[0]!), TARGET), false);
    assert.equal(isLinkPut(linkPut(IPS[0]!), TARGET), true);
    assert.equal(isLinkPut(linkPut(IPS[0]!, Buffer.from('a8i0').toString('hex')), TARGET), false, 'another actor');
    assert.equal(isLinkPut(entryPut(IPS[0]!), TARGET), false);
  });
});

describe('relay faults: the staleListHold race', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 }));
  afterEach(() => mock.timers.reset());

  it('holds the lister, re-arms through another node, holds that one after its link, and lets the listing land', () => {
    const { relay, r, armed, raced } = race(0);
    relay.send(listing(IPS[2]!));
    assert.deepEqual(relay.events, [], 'no window open: nothing held');
    r.open(FAULT);
    relay.send(renewal(IPS[2]!));
    relay.send(listing(IPS[2]!));
    assert.deepEqual(relay.events, ['hold n2']);
    mock.timers.tick(2_999);
    assert.deepEqual(armed, []);
    mock.timers.tick(1);
    assert.deepEqual(armed, [[TARGET, 2]]);
    // The arm went to n0, which failed it; its retry through n1 took the actor. A link before the
    // entry does not count, nor, after it, another node's requests.
    relay.send(linkPut(IPS[1]!));
    relay.send(entryPut(IPS[1]!, DUE + 1));
    relay.send(entryPut(IPS[1]!));
    relay.send(linkPut(IPS[0]!));
    relay.send(renewal(IPS[1]!));
    relay.send(linkPut(IPS[1]!));
    assert.deepEqual(relay.events, ['hold n2', 'arm via n0']);
    relay.send(renewal(IPS[0]!));
    assert.deepEqual(relay.events, ['hold n2', 'arm via n0']);
    relay.send(linkPut(IPS[1]!)); // its alarm's run: held, and the listing goes on
    assert.deepEqual(relay.events, ['hold n2', 'arm via n0', 'hold n1', 'release n2']);
    assert.deepEqual(raced, [[2, 1]]);
    relay.send(req(IPS[2]!, 'POST', '/bucket', 'delete')); // the lister's removal: checked again
    assert.deepEqual(raced, [
      [2, 1],
      [2, 1],
    ]);
    mock.timers.tick(FAULT.holdMs);
    assert.deepEqual(relay.events.at(-1), 'release n1');
    assert.equal(r.windows.length, 1);
    assert.notEqual(r.windows[0]!.to, Infinity);
    // One race per window.
    relay.send(listing(IPS[1]!));
    assert.equal(relay.events.length, 5);
  });

  it("keeps the new owner held until 2.5 s past the lister's removal (holdMs at least), 10 s if none comes", () => {
    const start = (armVia: number) => {
      const x = race(armVia);
      x.r.open(FAULT);
      x.relay.send(listing(IPS[2]!));
      mock.timers.tick(3_000);
      x.relay.send(entryPut(IPS[0]!));
      x.relay.send(linkPut(IPS[0]!));
      x.relay.send(renewal(IPS[0]!));
      assert.deepEqual(x.relay.events, ['hold n2', 'arm via n0', 'hold n0', 'release n2']);
      return x.relay;
    };
    const removal = req(IPS[2]!, 'POST', '/bucket', 'delete');

    const early = start(0); // the removal at once: held holdMs
    early.send(removal);
    mock.timers.tick(FAULT.holdMs - 1);
    assert.equal(early.events.length, 4);
    mock.timers.tick(1);
    assert.equal(early.events.at(-1), 'release n0');

    const late = start(0); // the lister got through late: 2.5 s after its removal
    mock.timers.tick(6_000);
    late.send(removal);
    mock.timers.tick(2_999);
    assert.equal(late.events.length, 4, 'still held past holdMs');
    mock.timers.tick(1);
    assert.equal(late.events.at(-1), 'release n0');

    const none = start(0); // no removal
    mock.timers.tick(9_999);
    assert.equal(none.events.length, 4);
    mock.timers.tick(1);
    assert.equal(none.events.at(-1), 'release n0');
  });

  it('lets the lister go after maxHeldMs when no node lists the time again, and tries again on the next listing in the window', () => {
    const { relay, r, raced } = race(1);
    r.open(FAULT);
    relay.send(listing(IPS[0]!));
    mock.timers.tick(9_000);
    assert.deepEqual(relay.events, ['hold n0', 'arm via n1', 'release n0']);
    assert.deepEqual(raced, []);
    assert.notEqual(r.windows[0]!.to, Infinity);
    relay.send(listing(IPS[2]!));
    assert.deepEqual(relay.events.slice(3), ['hold n2'], 'the window is still open');
    assert.equal(r.stats.retried, 1);
    mock.timers.tick(9_000);
    r.close();
    relay.send(listing(IPS[0]!));
    assert.deepEqual(relay.events.slice(3), ['hold n2', 'arm via n1', 'release n2'], 'closed: nothing held');
  });

  it('tries again when the lister removed nothing by the time the new owner was let go', () => {
    const { relay, r, raced } = race(0);
    r.open(FAULT);
    relay.send(listing(IPS[2]!));
    mock.timers.tick(3_000);
    relay.send(entryPut(IPS[1]!));
    relay.send(linkPut(IPS[1]!));
    relay.send(renewal(IPS[1]!));
    assert.deepEqual(relay.events, ['hold n2', 'arm via n0', 'hold n1', 'release n2']);
    assert.equal(raced.length, 1);
    mock.timers.tick(10_000);
    assert.equal(relay.events.at(-1), 'release n1');
    relay.send(listing(IPS[1]!));
    assert.equal(relay.events.at(-1), 'hold n1', 'the next listing is held');
  });

  it('lets the lister go at once when no node can re-arm, and holds nothing after its window closed', () => {
    const a = race(null);
    a.r.open(FAULT);
    a.relay.send(listing(IPS[0]!));
    mock.timers.tick(3_000);
    assert.deepEqual(a.relay.events, ['hold n0', 'no node to arm', 'release n0']);

    const b = race(1);
    b.r.open(FAULT);
    b.r.close();
    b.relay.send(listing(IPS[0]!));
    assert.deepEqual(b.relay.events, []);
  });

  it('lets the listing of an actor it may not arm again go on, and holds the next one', () => {
    const { relay, r } = race(1);
    r.open(FAULT);
    relay.send(listing(IPS[0]!, `run-1/alarms/chaos/00${DUE}/ChaosLedger.t/${Buffer.from('a9i0').toString('hex')}/`));
    assert.deepEqual(relay.events, []);
    relay.send(listing(IPS[2]!));
    assert.deepEqual(relay.events, ['hold n2']);
  });

  it("holds only the listings of the window's own actors", () => {
    const relay = new FakeRelay();
    const r = new StaleListRace(
      relay,
      (n) => IPS[n]!,
      (ip) => IPS.indexOf(ip),
      {
        eligible: (t, f) => f.slots.includes(Number(/^a(\d+)i/.exec(t.name)![1])),
        arm: () => 0,
        raced: () => undefined,
        log: () => undefined,
      },
    );
    r.open(FAULT);
    relay.send(listing(IPS[0]!, `run-1/alarms/chaos/00${DUE}/ChaosLedger.t/${Buffer.from('a3i0').toString('hex')}/`));
    assert.deepEqual(relay.events, []);
    relay.send(listing(IPS[0]!));
    assert.deepEqual(relay.events, ['hold n0']);
    r.dispose();
  });

  it('releases whatever it holds when disposed', () => {
    const { relay, r } = race(1);
    r.open(FAULT);
    relay.send(listing(IPS[0]!));
    r.dispose();
    assert.deepEqual(relay.events, ['hold n0', 'release n0']);
    mock.timers.tick(10_000);
    assert.deepEqual(relay.events, ['hold n0', 'release n0'], 'no timer left');
  });
});

describe('relay faults: calm spans', () => {
  it('merges the spans that overlap, in time order', () => {
    assert.deepEqual(
      mergedSpans([
        { from: 50, to: 60 },
        { from: 0, to: 10 },
        { from: 5, to: 20 },
        { from: 20, to: 30 },
      ]),
      [
        { from: 0, to: 30 },
        { from: 50, to: 60 },
      ],
    );
  });
});

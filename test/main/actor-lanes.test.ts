import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ActorLanes, type Outcome } from '../../src/main/actor-lanes.js';

/** A gate a test opens by hand: work waits on it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

const settle = (ps: Promise<unknown>[]) => Promise.allSettled(ps);

describe('ActorLanes.batch', () => {
  it('events that queue while one runs go as one batch, in arrival order, each with its own outcome', async () => {
    const lanes = new ActorLanes(100);
    const g = gate();
    const batches: number[][] = [];
    const work = async (items: number[]): Promise<Outcome<string>[]> => {
      batches.push(items);
      if (batches.length === 1) await g.opened;
      return items.map((i) => (i % 3 === 0 ? { ok: false, error: new Error(`e${i}`) } : { ok: true, value: `v${i}` }));
    };
    const ps = [1, 2, 3, 4, 5, 6].map((i) => lanes.batch('a', i, 10, work));
    await Promise.resolve();
    g.open();
    const rs = await settle(ps);
    assert.deepEqual(batches, [[1, 2, 3, 4, 5, 6]], 'queued before the first started: one batch');
    assert.deepEqual(
      rs.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['v1', 'v2', 'e3', 'v4', 'v5', 'e6'],
    );
    await lanes.drained();
    assert.equal(lanes.active, 0, 'the lane is gone once empty');
  });

  it('a batch holds at most cap events; the rest wait for the next one, in order', async () => {
    const lanes = new ActorLanes(100);
    const g = gate();
    const batches: number[][] = [];
    const work = async (items: number[]): Promise<Outcome<number>[]> => {
      batches.push(items);
      await g.opened;
      return items.map((value) => ({ ok: true, value }));
    };
    const first = lanes.batch('a', 0, 3, work);
    await new Promise((r) => setImmediate(r)); // the first batch has started
    const rest = [1, 2, 3, 4, 5, 6, 7].map((i) => lanes.batch('a', i, 3, work));
    g.open();
    assert.deepEqual(await Promise.all([first, ...rest]), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.deepEqual(batches, [[0], [1, 2, 3], [4, 5, 6], [7]]);
  });

  it('a run queued after a batch closes it: later events do not overtake it', async () => {
    const lanes = new ActorLanes(100);
    const g = gate();
    const order: string[] = [];
    const work = async (items: string[]): Promise<Outcome<void>[]> => {
      order.push(items.join('+'));
      await g.opened;
      return items.map(() => ({ ok: true, value: undefined }));
    };
    const ps = [lanes.batch('a', 'x', 10, work), lanes.batch('a', 'y', 10, work)];
    ps.push(lanes.run('a', async () => void order.push('close')));
    ps.push(lanes.batch('a', 'z', 10, work));
    g.open();
    await Promise.all(ps);
    assert.deepEqual(order, ['x+y', 'close', 'z']);
  });

  it('counts every batched event against actorQueueMax: past it OVERLOADED, changing nothing', async () => {
    const lanes = new ActorLanes(3);
    const g = gate();
    const ran: number[] = [];
    const work = async (items: number[]): Promise<Outcome<number>[]> => {
      await g.opened;
      ran.push(...items);
      return items.map((value) => ({ ok: true, value }));
    };
    const ps = [1, 2, 3, 4].map((i) => lanes.batch('a', i, 64, work));
    const r4 = await ps[3]!.then(
      () => 'ran',
      (e: { code?: string }) => e.code,
    );
    assert.equal(r4, 'OVERLOADED');
    g.open();
    assert.deepEqual(await Promise.all(ps.slice(0, 3)), [1, 2, 3]);
    assert.deepEqual(ran, [1, 2, 3]);
    await lanes.drained();
    assert.equal(await lanes.batch('a', 5, 64, work), 5, 'room again once they ran');
  });

  it('work that throws fails every event of its batch, and the lane goes on', async () => {
    const lanes = new ActorLanes(100);
    let calls = 0;
    const work = async (items: number[]): Promise<Outcome<number>[]> => {
      if (calls++ === 0) throw new Error('worker died');
      return items.map((value) => ({ ok: true, value }));
    };
    const rs = await settle([1, 2].map((i) => lanes.batch('a', i, 10, work)));
    assert.deepEqual(
      rs.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.equal(await lanes.batch('a', 3, 10, work), 3);
  });

  it('lanes of different actors batch apart', async () => {
    const lanes = new ActorLanes(100);
    const batches: string[][] = [];
    const work = async (items: string[]): Promise<Outcome<string>[]> => {
      batches.push(items);
      return items.map((value) => ({ ok: true, value }));
    };
    await Promise.all(['a1', 'b1', 'a2', 'b2'].map((i) => lanes.batch(i[0]!, i, 10, work)));
    assert.deepEqual(batches, [
      ['a1', 'a2'],
      ['b1', 'b2'],
    ]);
  });
});

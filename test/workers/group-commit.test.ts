/**
 * Group commit of durable calls (pipeline.ts, replica.sync): a durable call tells its caller once
 * it committed (so the actor's next event may run) and replies only once a link holding its commit
 * is in the bucket; the commits made while one link is in flight go up together in the next. Link
 * uploads are held at a gate here, so every step is decided by the test, not by timing.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { listChain } from '../../src/replication/chain.js';
import { chainPrefix } from '../../src/replication/state-keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { PutCondition } from '../../src/store/types.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import type { ActorEvent, EventResult } from '../../src/workers/messages.js';
import { runEvent } from '../../src/workers/pipeline.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const ADDRESS = 't/Acc/hot';
const Acc = defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE t (v INTEGER)');
  },
  methods: {
    put(ctx: ActorContext, v: number) {
      ctx.sql.prepare('INSERT INTO t VALUES (?)').run(v);
      return v;
    },
    values: (ctx: ActorContext) => (ctx.sql.prepare('SELECT v FROM t ORDER BY v').all() as { v: number }[]).map((r) => r.v),
  },
});

/** A bucket whose link uploads wait at a gate while it is shut; `arrived` resolves when one waits there. */
class GatedStore extends MemoryStore {
  shut = false;
  links = 0;
  private waiting: (() => void)[] = [];
  private onArrive: (() => void) | undefined;

  override async put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    if (key.startsWith(chainPrefix(parseAddress(ADDRESS)))) {
      this.links++;
      if (this.shut) {
        const opened = new Promise<void>((r) => this.waiting.push(r));
        this.onArrive?.();
        await opened;
      }
    }
    return super.put(key, body, condition);
  }

  arrived(): Promise<void> {
    return new Promise((r) => (this.onArrive = r));
  }

  /** Lets the uploads waiting now through; the gate stays as it is for later ones. */
  release(): void {
    for (const w of this.waiting.splice(0)) w();
  }

  open(): void {
    this.shut = false;
    this.release();
  }
}

interface Sent {
  /** Resolves with the early result once the call committed. */
  committed: Promise<EventResult>;
  reply: Promise<EventResult>;
  replied: boolean;
}

function send(env: InlineActors, method: string, args: unknown[], idempotencyKey?: string): Sent {
  let committed!: (r: EventResult) => void;
  const early = new Promise<EventResult>((r) => (committed = r));
  const event: ActorEvent = { type: 'request', address: parseAddress(ADDRESS), method, args, durable: true, generation: 0 };
  const s: Sent = {
    committed: early,
    reply: runEvent(env.deps, idempotencyKey === undefined ? event : { ...event, idempotencyKey }, committed),
    replied: false,
  };
  void s.reply.then(() => (s.replied = true));
  return s;
}

/** Lets every pending promise reaction run (no timers involved: the store and the pipeline run on microtasks). */
const settle = () => new Promise((r) => setImmediate(r));

describe('group commit of durable calls (pipeline)', () => {
  const envs: InlineActors[] = [];
  const make = () => {
    const store = new GatedStore();
    const env = new InlineActors({ Acc }, { replicationDelayMs: 60_000 }, store);
    envs.push(env);
    return { env, store };
  };
  after(async () => {
    for (const e of envs) await e.cleanup();
  });

  /** Shuts the gate and sends a durable call whose link is then held there. */
  async function inFlight(env: InlineActors, store: GatedStore, v: number): Promise<Sent> {
    store.shut = true;
    const arrived = store.arrived();
    const a = send(env, 'put', [v]);
    okResult(await a.committed);
    await arrived;
    return a;
  }

  /** Sends durable calls one after another, each once the previous committed (what the node's lane does). */
  async function committedInTurn(env: InlineActors, calls: [number, string?][]): Promise<Sent[]> {
    const out: Sent[] = [];
    for (const [v, key] of calls) {
      const s = send(env, 'put', [v], key);
      okResult(await s.committed);
      out.push(s);
    }
    return out;
  }

  it('commits made while a link is in flight go up in one link; each reply waits for the link holding its commit', async () => {
    const { env, store } = make();
    okResult(await send(env, 'put', [1]).reply); // created; its links are in the bucket
    const linksBefore = store.links;
    const a = await inFlight(env, store, 2);
    const rest = await committedInTurn(env, [[3], [4], [5]]); // each ran and committed while a's link was in flight
    await settle();
    assert.equal([a, ...rest].filter((s) => s.replied).length, 0, 'no durable call replies before its link is in the bucket');
    const next = store.arrived();
    store.release(); // a's link lands; the next one, with 3, 4 and 5, comes to the gate
    await next;
    assert.equal(okResult(await a.reply), 2);
    await settle();
    assert.equal(rest.filter((s) => s.replied).length, 0, 'calls 3, 4, 5 wait for their own link');
    const head = (await listChain(store, parseAddress(ADDRESS))).length;
    store.open();
    assert.deepEqual((await Promise.all(rest.map((s) => s.reply))).map(okResult), [3, 4, 5]);
    assert.equal((await listChain(store, parseAddress(ADDRESS))).length, head + 1);
    assert.equal(store.links - linksBefore, 2, 'one link for call 2, one for the three calls committed meanwhile');
    assert.deepEqual(okResult(await env.call(ADDRESS, 'values')), [1, 2, 3, 4, 5]);
  });

  it('a failed upload (its PUT returned after the lease ran out) fails every durable call waiting for it, and a repeat of a keyed one', async () => {
    const { env, store } = make();
    okResult(await send(env, 'put', [1]).reply);
    const a = await inFlight(env, store, 2);
    const [b, k] = await committedInTurn(env, [[3], [4, 'key-4']]);
    const repeat = send(env, 'put', [4], 'key-4'); // found in the record, not yet in the bucket: it waits
    await settle();
    assert.equal(repeat.replied, false, 'a repeat waits until the recorded call is in the bucket');
    // The lease runs out while a's link is in flight: it lands, but after the lease (another node may
    // have taken over meanwhile), so it does not count; the actor is given up and nothing is acknowledged.
    env.leaseValid = false;
    store.open();
    for (const s of [a, b!, k!, repeat]) {
      const r = await s.reply;
      assert.equal(r.type, 'error', 'never acknowledged');
      assert.equal(r.type === 'error' && r.error.code, 'LEASE_LOST');
    }
  });
});

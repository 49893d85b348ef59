/**
 * An actor handle: what `node.actor(address)` (in the node's process) and `client.actor(address)`
 * (keepwork/client, over HTTP) return, built here from one `ActorTransport` so both behave alike.
 *
 * Calls by method name take any arguments and return `unknown` (or a type the caller names):
 *
 *   node.actor('acme/Counter/hits').call('add', 5)
 *
 * Given the class's type — the default export of its module, `import type Counter from
 * './counter.js'` — the handle's stubs have the class's methods, typed from `defineActor`: the
 * `ctx` parameter dropped, the result unwrapped from its promise.
 *
 *   const hits = node.actor<typeof Counter>('acme/Counter/hits')
 *   await hits.plain.add(5)                                   // a plain call: Promise<number>
 *   await hits.durable.add(5)                                 // a durable call
 *   await hits.withIdempotencyKey('order-17').durable.add(5)  // a durable call, applied once
 *
 * The class's type is the caller's word: the node checks the method name (NOT_FOUND), and the
 * handler checks its arguments. A stub is a Proxy: every property is a method, except `then` (so a
 * stub is never mistaken for a promise) and symbols; a method named `then` is called by name.
 *
 * No imports: the client (keepwork/client) loads this module in processes that load nothing else
 * of keepwork's.
 */
import type { ActorAddress } from './address.js';

/** What any actor class (a `defineActor` definition) has, for as much as a handle needs of its type. */
export interface ActorShape {
  methods: Record<string, (ctx: any, ...args: any[]) => unknown>;
}

/** A class's method as its caller sees it: without `ctx`, its result a promise of what the handler returns. */
export type StubMethod<F> = F extends (ctx: any, ...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;

/** A class's methods as calls of one kind (plain, durable, durable with a key). */
export type Stub<D extends ActorShape> = { readonly [K in keyof D['methods'] & string]: StubMethod<D['methods'][K]> };

export interface ActorHandle<D extends ActorShape = ActorShape> {
  readonly address: ActorAddress;
  call<T = unknown>(method: string, ...args: unknown[]): Promise<T>;
  callDurable<T = unknown>(method: string, ...args: unknown[]): Promise<T>;
  /** The class's methods as plain calls: `hits.plain.add(5)` is `hits.call('add', 5)`, typed. */
  readonly plain: Stub<D>;
  /** The class's methods as durable calls: `hits.durable.add(5)` is `hits.callDurable('add', 5)`, typed. */
  readonly durable: Stub<D>;
  /**
   * The same actor, its durable calls carrying an idempotency key (docs/guide.md "Idempotent durable
   * calls"): `actor.withIdempotencyKey('order-17').durable.pay(30)`. The first call with the key runs
   * and its outcome is recorded with the actor's state; a repeat returns that outcome without
   * running the handler; a repeat with another method or other arguments is refused
   * (IDEMPOTENCY_MISMATCH). The key (1–200 visible ASCII characters) is checked at once (BAD_REQUEST).
   */
  withIdempotencyKey(key: string): IdempotentActorHandle<D>;
  getAlarm(): Promise<number | null>;
}

export interface IdempotentActorHandle<D extends ActorShape = ActorShape> {
  readonly address: ActorAddress;
  readonly idempotencyKey: string;
  callDurable<T = unknown>(method: string, ...args: unknown[]): Promise<T>;
  /** The class's methods as durable calls carrying the key, typed. */
  readonly durable: Stub<D>;
}

/** How a handle reaches its actor: the node's own routing, or HTTP. */
export interface ActorTransport {
  /** One call; `idempotencyKey` only with `durable`. */
  request(method: string, args: unknown[], durable: boolean, idempotencyKey?: string): Promise<unknown>;
  readAlarm(): Promise<number | null>;
  /** The key, checked (BAD_REQUEST names the rule). */
  checkIdempotencyKey(key: string): string;
}

export function actorHandle<D extends ActorShape>(address: ActorAddress, t: ActorTransport): ActorHandle<D> {
  return Object.freeze({
    address,
    call: (method: string, ...args: unknown[]) => t.request(method, args, false) as never,
    callDurable: (method: string, ...args: unknown[]) => t.request(method, args, true) as never,
    plain: stub<D>((method, args) => t.request(method, args, false)),
    durable: stub<D>((method, args) => t.request(method, args, true)),
    withIdempotencyKey: (key: string): IdempotentActorHandle<D> => {
      const idempotencyKey = t.checkIdempotencyKey(key);
      return Object.freeze({
        address,
        idempotencyKey,
        callDurable: (method: string, ...args: unknown[]) => t.request(method, args, true, idempotencyKey) as never,
        durable: stub<D>((method, args) => t.request(method, args, true, idempotencyKey)),
      });
    },
    getAlarm: () => t.readAlarm(),
  });
}

/** A Proxy whose every string property but `then` is a method that calls `send`. */
function stub<D extends ActorShape>(send: (method: string, args: unknown[]) => Promise<unknown>): Stub<D> {
  return new Proxy(Object.freeze(Object.create(null)) as object, {
    get: (_target, prop) => (typeof prop !== 'string' || prop === 'then' ? undefined : (...args: unknown[]) => send(prop, args)),
  }) as Stub<D>;
}

/**
 * `keepwork/client`: calls a keepwork node's actors over its HTTP API (docs/http-api.md) from
 * another process, with the same handles as `node.actor(…)` (core/actor-handle.ts).
 *
 *   import { connect } from 'keepwork/client'
 *   import type Counter from './counter.js'
 *
 *   const kw = connect({ url: 'http://127.0.0.1:8080', token: process.env.KEEPWORK_TOKEN })
 *   const hits = kw.actor<typeof Counter>('acme/Counter/hits')
 *   await hits.plain.add(1)        // POST …/add
 *   await hits.durable.add(1)      // POST …/add?durable=1, Idempotency-Key: <new UUID>, retried
 *
 * A durable call carries an idempotency key — the handle's (`withIdempotencyKey`), or one made for
 * the call — and only a durable call is retried, with that same key, so a retry of a call that did
 * run is answered from the actor's record instead of running again: on a 503 (after at least its
 * Retry-After) and when the node did not answer, bounded by callAttemptsMax and callRetryTotalMs
 * (options.ts, retry-plan.ts). A plain call or an alarm read is one attempt. Errors are the
 * classes of keepwork's ErrorCodes (`e instanceof Forbidden`, `e.code === 'FORBIDDEN'`).
 *
 * Loads nothing but this folder and a few modules of core/ that import nothing (no SQLite, no
 * threads, no logger, no AWS SDK): test/client/imports.test.ts checks the import graph.
 */
import { actorHandle, type ActorHandle, type ActorShape } from '../core/actor-handle.js';
import { alarmPath, callPath } from '../core/actor-routes.js';
import { parseAddress, type ActorAddress } from '../core/address.js';
import { SystemClock, type Clock } from '../core/clock.js';
import { IDEMPOTENCY_HEADER, checkIdempotencyKey } from '../core/idempotency-key.js';
import { attempt, type Outcome, type Request } from './attempt.js';
import { resolveClientOptions, type ClientOptions, type ClientSettings } from './options.js';
import { retryDelayMs } from './retry-plan.js';

export { CLIENT_DEFAULTS, resolveClientOptions, type ClientOptions, type ClientSettings } from './options.js';
export type { ActorHandle, IdempotentActorHandle, ActorShape, Stub, StubMethod } from '../core/actor-handle.js';
export type { ActorAddress } from '../core/address.js';
export * from '../core/errors.js';

export interface KeepworkClient {
  readonly settings: ClientSettings;
  /** A handle on the actor at `address`; name the class's type for typed stubs: `actor<typeof Counter>(…)`. */
  actor<D extends ActorShape = ActorShape>(address: string | { tenant: string; className: string; name: string }): ActorHandle<D>;
}

/** Test seams: the transport, the time retries wait on, their jitter, and the keys made for durable calls. */
export interface ClientSeams {
  fetch?: typeof fetch;
  clock?: Pick<Clock, 'now' | 'sleep'>;
  /** A draw from [0, 1) for the jitter of retry delays. */
  random?: () => number;
  /** An idempotency key for one durable call that has none. */
  newKey?: () => string;
}

/** A client of the node at `options.url` (nothing is sent until a call; BAD_CONFIG on a bad option). */
export function connect(options: ClientOptions, seams: ClientSeams = {}): KeepworkClient {
  const settings = resolveClientOptions(options);
  const io: Required<ClientSeams> = {
    fetch: seams.fetch ?? ((input, init) => fetch(input, init)),
    clock: seams.clock ?? new SystemClock(),
    random: seams.random ?? Math.random,
    newKey: seams.newKey ?? (() => `kwc-${crypto.randomUUID()}`),
  };
  return Object.freeze({
    settings,
    actor: <D extends ActorShape = ActorShape>(input: string | { tenant: string; className: string; name: string }) =>
      remoteActor<D>(settings, io, parseAddress(input)),
  });
}

function remoteActor<D extends ActorShape>(s: ClientSettings, io: Required<ClientSeams>, address: ActorAddress): ActorHandle<D> {
  return actorHandle<D>(address, {
    async request(method, args, durable, idempotencyKey) {
      const key = durable ? (idempotencyKey ?? io.newKey()) : undefined;
      const body = await send(s, io, durable, {
        method: 'POST',
        path: callPath(address, method, durable),
        body: JSON.stringify(args),
        headers: key === undefined ? {} : { [IDEMPOTENCY_HEADER]: key },
      });
      return body.result;
    },
    async readAlarm() {
      const body = await send(s, io, false, { method: 'GET', path: alarmPath(address) });
      return body.alarm as number | null;
    },
    checkIdempotencyKey,
  });
}

/** The request's attempts (more than one only for a durable call; retry-plan.ts); its answer or the last failure. */
async function send(s: ClientSettings, io: Required<ClientSeams>, durable: boolean, req: Request): Promise<Record<string, unknown>> {
  const startedMs = io.clock.now();
  for (let n = 1; ; n++) {
    const outcome: Outcome = await attempt(s, io.fetch, req, () => io.clock.now());
    if (outcome.ok) return outcome.body;
    const input = { failure: outcome.failure, durable, attempt: n, elapsedMs: io.clock.now() - startedMs, random: io.random() };
    const delayMs = retryDelayMs(input, s);
    if (delayMs === undefined) throw outcome.failure.error;
    await io.clock.sleep(delayMs);
  }
}

/**
 * `memory:<name>`: one in-memory bucket for every thread of a process (benchmarks and tests), so
 * a node's main thread and its workers — and several nodes in one process — see the same
 * objects, as they would a real bucket, without a bucket's cost.
 *
 *   main thread      MemoryStore  ◀── requests ──  BroadcastChannel `keepwork memory:<name>`
 *   (host, first)        │                                ▲
 *                        └────────── replies ─────────────┘──▶ a worker's SharedMemoryClient
 *
 * The process's main thread hosts the store (a node opens its bucket there before it starts its
 * workers); worker threads reach it by request and reply over a BroadcastChannel of that name.
 * Each reply names the client (thread and serial) and request it answers; a keepwork error crosses as data and is
 * revived (`reviveError`), so a 412 is still a PreconditionFailed by its code. Hosts are counted:
 * the store goes when the last one opened in the main thread is closed. A worker that asks before
 * any host exists waits for one (there is no timeout: this is a bench's and a test's bucket).
 */
import { BroadcastChannel, isMainThread, threadId } from 'node:worker_threads';
import type { Clock } from '../../core/clock.js';
import { BadConfig, isKeepworkError, reviveError, type ErrorJSON, type KeepworkError } from '../../core/errors.js';
import { MemoryStore } from '../memory.js';
import type { ListOptions, ListPage, ObjectHead, ObjectStore, PutCondition, StoredObject } from '../types.js';

const SHARED_MEMORY_SCHEME = 'memory:';
const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/i;

type Op = 'get' | 'head' | 'put' | 'delete' | 'deleteMany' | 'list';

interface Request {
  kind: 'request';
  from: string;
  id: number;
  op: Op;
  args: unknown[];
}

interface Reply {
  kind: 'reply';
  to: string;
  id: number;
  value?: unknown;
  error?: ErrorJSON | { message: string };
}

interface Host {
  store: MemoryStore;
  channel: BroadcastChannel;
  users: number;
}

const hosts = new Map<string, Host>();
/** Clients made in this thread: with the thread's id, each client's address for replies. */
let clientsMade = 0;

/** The name in `memory:<name>`, or null for another URL (`memory:` alone is a store per call). */
export function sharedMemoryName(url: string): string | null {
  if (!url.startsWith(SHARED_MEMORY_SCHEME) || url === SHARED_MEMORY_SCHEME) return null;
  const name = url.slice(SHARED_MEMORY_SCHEME.length);
  if (!NAME.test(name)) throw new BadConfig(`memory bucket name ${JSON.stringify(name)}: use 1–64 letters, digits, '.', '_' or '-'`);
  return name;
}

/** `memory:<name>`: the host's store in the main thread, a client of it in a worker thread. */
export function openSharedMemory(name: string, clock: Clock): ObjectStore {
  return isMainThread ? hostStore(name, clock) : new SharedMemoryClient(name);
}

function channelName(name: string): string {
  return `keepwork ${SHARED_MEMORY_SCHEME}${name}`;
}

function hostStore(name: string, clock: Clock): ObjectStore {
  let host = hosts.get(name);
  if (!host) {
    const store = new MemoryStore({ clock });
    const channel = new BroadcastChannel(channelName(name));
    channel.onmessage = (ev: unknown) => void serve(store, channel, (ev as { data: Request | Reply }).data);
    channel.unref(); // a bucket keeps no process alive
    host = { store, channel, users: 0 };
    hosts.set(name, host);
  }
  host.users++;
  return new HostView(name, host);
}

/** The host's own view of its store: closing it gives up this opener's share. */
class HostView implements ObjectStore {
  readonly description: string;
  #closed = false;

  constructor(
    private readonly name: string,
    private readonly host: Host,
  ) {
    this.description = `${SHARED_MEMORY_SCHEME}${name}`;
  }

  get(key: string): Promise<StoredObject | null> {
    return this.host.store.get(key);
  }

  head(key: string): Promise<ObjectHead | null> {
    return this.host.store.head(key);
  }

  put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    return this.host.store.put(key, body, condition);
  }

  delete(key: string): Promise<void> {
    return this.host.store.delete(key);
  }

  deleteMany(keys: readonly string[]): Promise<void> {
    return this.host.store.deleteMany(keys);
  }

  list(options?: ListOptions): Promise<ListPage> {
    return this.host.store.list(options);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (--this.host.users > 0) return;
    hosts.delete(this.name);
    this.host.channel.close();
    await this.host.store.close();
  }
}

async function serve(store: MemoryStore, channel: BroadcastChannel, m: Request | Reply): Promise<void> {
  if (m.kind !== 'request') return;
  const reply: Reply = { kind: 'reply', to: m.from, id: m.id };
  try {
    reply.value = await (store[m.op] as (...a: unknown[]) => Promise<unknown>).apply(store, m.args);
  } catch (e) {
    reply.error = isKeepworkError(e) ? (e as KeepworkError).toJSON() : { message: e instanceof Error ? e.message : String(e) };
  }
  channel.postMessage(reply);
}

/** A worker thread's way to the main thread's store (exported for tests, which run it in the main thread). */
export class SharedMemoryClient implements ObjectStore {
  readonly description: string;
  readonly #channel: BroadcastChannel;
  readonly #address = `${threadId}/${clientsMade++}`;
  readonly #waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  #next = 0;

  constructor(name: string) {
    this.description = `${SHARED_MEMORY_SCHEME}${name}`;
    this.#channel = new BroadcastChannel(channelName(name));
    this.#channel.onmessage = (ev: unknown) => this.#answer((ev as { data: Request | Reply }).data);
    this.#channel.unref();
  }

  get(key: string): Promise<StoredObject | null> {
    return this.#ask('get', [key]) as Promise<StoredObject | null>;
  }

  head(key: string): Promise<ObjectHead | null> {
    return this.#ask('head', [key]) as Promise<ObjectHead | null>;
  }

  put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    // The view alone: a clone of a pooled Buffer would copy its whole slab. Anything else goes as
    // it is, for the store to refuse.
    const copy = body instanceof Uint8Array ? new Uint8Array(body) : body;
    return this.#ask('put', condition === undefined ? [key, copy] : [key, copy, condition]) as Promise<{ etag: string }>;
  }

  async delete(key: string): Promise<void> {
    await this.#ask('delete', [key]);
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    await this.#ask('deleteMany', [[...keys]]);
  }

  list(options?: ListOptions): Promise<ListPage> {
    return this.#ask('list', options === undefined ? [] : [options]) as Promise<ListPage>;
  }

  close(): Promise<void> {
    this.#channel.close();
    return Promise.resolve();
  }

  #ask(op: Op, args: unknown[]): Promise<unknown> {
    const id = this.#next++;
    const request: Request = { kind: 'request', from: this.#address, id, op, args };
    return new Promise((resolve, reject) => {
      if (this.#waiting.size === 0) this.#channel.ref(); // a request waiting for its reply keeps the thread alive
      this.#waiting.set(id, { resolve, reject });
      this.#channel.postMessage(request);
    });
  }

  #answer(m: Request | Reply): void {
    if (m.kind !== 'reply' || m.to !== this.#address) return; // another client's request or reply
    const waiter = this.#waiting.get(m.id);
    if (!waiter) return;
    this.#waiting.delete(m.id);
    if (this.#waiting.size === 0) this.#channel.unref();
    if (m.error === undefined) waiter.resolve(m.value);
    else waiter.reject('code' in m.error ? reviveError(m.error) : new Error(m.error.message));
  }
}

/**
 * The in-memory store: deterministic, for tests and the simulator.
 *
 * Fault model (what the simulator can ask of it, per request, through `faults`):
 *   - latency: `delayMs` before the request takes effect (on the injected Clock, so virtual time
 *     under SimClock); different delays reorder requests exactly as a network would;
 *   - failure: `fail` rejects without applying (StoreUnavailable unless an error is given);
 *   - timeout that still lands: `timeout: { afterMs, landAfterMs }` — the caller is told after
 *     `afterMs` (AmbiguousWrite for writes, StoreUnavailable for reads) while the request is
 *     applied at `landAfterMs`, its condition checked against the state of that moment.
 * Without a fault hook every request applies at once, in call order. Bodies are copied in and out.
 *
 *   caller ──request──▶ faults(req) ──▶ [delay] ──▶ apply to map ──▶ reply
 *                                  └──▶ timeout ──▶ reply (error) … later: apply
 */
import type { Clock } from '../core/clock.js';
import { AmbiguousWrite, PreconditionFailed, StoreUnavailable } from '../core/errors.js';
import { etagOf } from './etag.js';
import { compareKeys, pageOf, resolveList, validateKey } from './keys.js';
import type { ListOptions, ListPage, ObjectHead, ObjectStore, PutCondition, StoredObject } from './types.js';
import type { StoreOp as CountedOp } from './request-counts.js';

/** The requests a memory store tells its hooks of and counts (deleteMany counts as delete, a conditional put as put). */
export type StoreOp = Exclude<CountedOp, 'delete_many' | 'put_conditional'>;

export interface StoreRequest {
  op: StoreOp;
  /** The key (the prefix for `list`). */
  key: string;
  /** Request number within this store, from 0. */
  seq: number;
  /** For `put`: its condition. */
  condition?: PutCondition;
}

export interface Fault {
  delayMs?: number;
  fail?: true | Error;
  timeout?: { afterMs: number; landAfterMs: number };
}

export type FaultHook = (request: StoreRequest) => Fault | undefined;

export interface MemoryStoreOptions {
  clock?: Clock;
  faults?: FaultHook;
}

interface Entry {
  body: Uint8Array;
  etag: string;
}

export class MemoryStore implements ObjectStore {
  readonly description = 'memory';
  /** Requests seen per operation (for tests and benchmarks). */
  readonly counts: Record<StoreOp, number> = { get: 0, head: 0, put: 0, delete: 0, list: 0 };
  private readonly objects = new Map<string, Entry>();
  private readonly sorted: string[] = [];
  private seq = 0;
  private closed = false;

  constructor(private readonly options: MemoryStoreOptions = {}) {}

  /** Replaces the fault hook (the simulator changes faults as a run goes on). */
  setFaults(faults: FaultHook | undefined): void {
    this.options.faults = faults;
  }

  async get(key: string): Promise<StoredObject | null> {
    validateKey(key);
    return this.request({ op: 'get', key }, () => {
      const e = this.objects.get(key);
      return e ? { body: Uint8Array.from(e.body), etag: e.etag } : null;
    });
  }

  async head(key: string): Promise<ObjectHead | null> {
    validateKey(key);
    return this.request({ op: 'head', key }, () => {
      const e = this.objects.get(key);
      return e ? { etag: e.etag, size: e.body.byteLength } : null;
    });
  }

  async put(key: string, body: Uint8Array, condition: PutCondition = {}): Promise<{ etag: string }> {
    validateKey(key);
    const copy = Uint8Array.from(body);
    return this.request({ op: 'put', key, condition }, () => this.applyPut(key, copy, condition));
  }

  async delete(key: string): Promise<void> {
    validateKey(key);
    return this.request({ op: 'delete', key }, () => this.applyDelete(key));
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    keys.forEach(validateKey);
    await Promise.all(keys.map((k) => this.delete(k)));
  }

  async list(options: ListOptions = {}): Promise<ListPage> {
    const r = resolveList(options);
    return this.request({ op: 'list', key: r.prefix }, () => {
      const out: string[] = [];
      for (let i = this.lowerBound(compareKeys(r.after, r.prefix) > 0 ? r.after : r.prefix); i < this.sorted.length; i++) {
        const k = this.sorted[i]!;
        if (!k.startsWith(r.prefix)) break;
        if (compareKeys(k, r.after) <= 0) continue;
        out.push(k);
        if (out.length > r.maxKeys) break;
      }
      return pageOf(out, r.maxKeys);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** Synchronous view for invariant checks: the object's etag, or undefined. */
  peek(key: string): Entry | undefined {
    return this.objects.get(key);
  }

  /** Synchronous view for invariant checks: every key in byte order. */
  keys(): readonly string[] {
    return this.sorted;
  }

  private applyPut(key: string, body: Uint8Array, condition: PutCondition): { etag: string } {
    const current = this.objects.get(key);
    if ('ifNoneMatch' in condition && current) throw new PreconditionFailed(`${key} already exists`, { details: { key } });
    if ('ifMatch' in condition && current?.etag !== condition.ifMatch) {
      throw new PreconditionFailed(`${key} does not have etag ${condition.ifMatch}`, { details: { key } });
    }
    const etag = etagOf(body);
    if (!current) this.sorted.splice(this.lowerBound(key), 0, key);
    this.objects.set(key, { body, etag });
    return { etag };
  }

  private applyDelete(key: string): void {
    if (!this.objects.delete(key)) return;
    this.sorted.splice(this.lowerBound(key), 1);
  }

  /** Index of the first key >= `key`. */
  private lowerBound(key: string): number {
    let lo = 0;
    let hi = this.sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(this.sorted[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private async request<T>(req: Omit<StoreRequest, 'seq'>, apply: () => T): Promise<T> {
    if (this.closed) throw new StoreUnavailable('memory store is closed');
    this.counts[req.op]++;
    const request = { ...req, seq: this.seq++ };
    const fault = this.options.faults?.(request);
    if (!fault) return apply();
    if (fault.fail) throw fault.fail === true ? new StoreUnavailable(`injected failure of ${req.op} ${req.key}`) : fault.fail;
    if (fault.timeout) return this.timeOut(request, fault.timeout, apply);
    if (fault.delayMs) await this.clock().sleep(fault.delayMs);
    return apply();
  }

  private async timeOut<T>(req: StoreRequest, t: { afterMs: number; landAfterMs: number }, apply: () => T): Promise<never> {
    const clock = this.clock();
    clock.setTimer(t.landAfterMs, () => {
      try {
        apply();
      } catch {
        // A late request that loses its condition changes nothing; nobody is waiting for it.
      }
    });
    await clock.sleep(t.afterMs);
    const message = `${req.op} ${req.key} timed out after ${t.afterMs} ms (it may still land)`;
    throw req.op === 'put' || req.op === 'delete' ? new AmbiguousWrite(message) : new StoreUnavailable(message);
  }

  private clock(): Clock {
    if (!this.options.clock) throw new Error('MemoryStore needs a clock for delays and timeouts');
    return this.options.clock;
  }
}

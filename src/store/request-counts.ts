/**
 * Bucket request counts by operation and key area, in shared memory, so the main thread and
 * every worker thread count into one table that /metrics reads without a message round trip.
 *
 *   counts[op × AREAS.length + area]   op ∈ STORE_OPS, area = the key's first segment
 *   ('alarms', 'state', 'holds', 'nodes', anything else 'other')
 *
 * One table per thread kind (main, workers): Atomics.add only, never reset.
 */
import type { ListOptions, ObjectStore, PutCondition } from './types.js';

/** `put` is an unconditional PUT, `put_conditional` one with If-None-Match or If-Match (S3 prices both as a PUT). */
const STORE_OPS = ['get', 'head', 'put', 'put_conditional', 'delete', 'delete_many', 'list'] as const;
const KEY_AREAS = ['alarms', 'state', 'holds', 'nodes', 'other'] as const;
export type StoreOp = (typeof STORE_OPS)[number];
export type KeyArea = (typeof KEY_AREAS)[number];

export class RequestCounts {
  readonly buffer: SharedArrayBuffer;
  private readonly counts: BigInt64Array;

  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(8 * STORE_OPS.length * KEY_AREAS.length);
    this.counts = new BigInt64Array(this.buffer);
  }

  add(op: StoreOp, key: string | undefined): void {
    Atomics.add(this.counts, STORE_OPS.indexOf(op) * KEY_AREAS.length + KEY_AREAS.indexOf(areaOf(key)), 1n);
  }

  /** Every non-zero count. */
  *entries(): Generator<{ op: StoreOp; area: KeyArea; count: number }> {
    for (const [i, op] of STORE_OPS.entries()) {
      for (const [j, area] of KEY_AREAS.entries()) {
        const count = Number(Atomics.load(this.counts, i * KEY_AREAS.length + j));
        if (count > 0) yield { op, area, count };
      }
    }
  }
}

export function areaOf(key: string | undefined): KeyArea {
  const first = key?.split('/', 1)[0] ?? '';
  return (KEY_AREAS as readonly string[]).includes(first) ? (first as KeyArea) : 'other';
}

/** The store, counting each request into `counts` before it is sent. */
export function countedStore(inner: ObjectStore, counts: Pick<RequestCounts, 'add'>): ObjectStore {
  return {
    get description() {
      return inner.description;
    },
    get: (key: string) => (counts.add('get', key), inner.get(key)),
    head: (key: string) => (counts.add('head', key), inner.head(key)),
    put: (key: string, body: Uint8Array, condition?: PutCondition) => (
      counts.add(isConditional(condition) ? 'put_conditional' : 'put', key),
      inner.put(key, body, condition)
    ),
    delete: (key: string) => (counts.add('delete', key), inner.delete(key)),
    deleteMany: (keys: readonly string[]) => (counts.add('delete_many', keys[0]), inner.deleteMany(keys)),
    list: (options?: ListOptions) => (counts.add('list', options?.prefix ?? options?.startAfter), inner.list(options)),
    close: () => inner.close(),
  };
}

function isConditional(condition: PutCondition | undefined): boolean {
  return condition !== undefined && ('ifNoneMatch' in condition || 'ifMatch' in condition);
}

/**
 * Store requests counted by operation in a SharedArrayBuffer, so that the worker threads (each
 * with its own store client: uploads, restores, index entries) and the main thread's metrics see
 * the same numbers without messages: one BigInt64 slot per operation, added to with Atomics.add.
 */
export const STORE_OPS = ['get', 'head', 'put', 'delete', 'delete_many', 'list'] as const;
export type StoreOp = (typeof STORE_OPS)[number];

export class SharedStoreCounts {
  readonly buffer: SharedArrayBuffer;
  private readonly slots: BigInt64Array;

  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(8 * STORE_OPS.length);
    this.slots = new BigInt64Array(this.buffer);
  }

  inc(op: string): void {
    const i = STORE_OPS.indexOf(op as StoreOp);
    if (i >= 0) Atomics.add(this.slots, i, 1n);
  }

  /** op → requests so far. */
  snapshot(): Record<StoreOp, number> {
    return Object.fromEntries(STORE_OPS.map((op, i) => [op, Number(Atomics.load(this.slots, i))])) as Record<StoreOp, number>;
  }
}

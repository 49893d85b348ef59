/** Wraps any ObjectStore: records every request (op, key) and can fail chosen ones. */
import { StoreUnavailable } from '../../src/core/errors.js';
import type { ListOptions, ObjectStore, PutCondition } from '../../src/store/types.js';

export class RecordingStore implements ObjectStore {
  readonly log: { op: string; key: string }[] = [];
  fail: (op: string, key: string) => boolean = () => false;

  constructor(readonly inner: ObjectStore) {}

  get description() {
    return `recording(${this.inner.description})`;
  }

  count(op: string, prefix: string): number {
    return this.log.filter((r) => r.op === op && r.key.startsWith(prefix)).length;
  }

  private note(op: string, key: string): void {
    this.log.push({ op, key });
    if (this.fail(op, key)) throw new StoreUnavailable(`injected failure of ${op} ${key}`);
  }

  async get(key: string) {
    this.note('get', key);
    return this.inner.get(key);
  }
  async head(key: string) {
    this.note('head', key);
    return this.inner.head(key);
  }
  async put(key: string, body: Uint8Array, condition?: PutCondition) {
    this.note('put', key);
    return this.inner.put(key, body, condition);
  }
  async delete(key: string) {
    this.note('delete', key);
    return this.inner.delete(key);
  }
  async deleteMany(keys: readonly string[]) {
    for (const k of keys) this.note('delete', k);
    return this.inner.deleteMany(keys);
  }
  async list(options?: ListOptions) {
    this.note('list', options?.prefix ?? '');
    return this.inner.list(options);
  }
  close() {
    return this.inner.close();
  }
}

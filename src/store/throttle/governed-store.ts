/**
 * GovernedStore: any store with its requests sent through a Governor (governor.ts), so a
 * throttling bucket slows each request class down instead of every request retrying on its own.
 * `openStore` puts it outermost around every store it opens; the stores below answer a throttle
 * with a throttled StoreUnavailable (signal.ts) rather than retrying it themselves (s3/store.ts),
 * and the fault wrapper's slowdown mode does the same (testing/faults.ts), so the path is tested
 * without S3.
 *
 * A deleteMany goes through the class of its first key (the callers' batches are of one area).
 */
import type { ListOptions, ListPage, ObjectHead, ObjectStore, PutCondition, StoredObject } from '../types.js';
import { requestClass } from './classes.js';
import type { Governor } from './governor.js';

export class GovernedStore implements ObjectStore {
  constructor(
    readonly inner: ObjectStore,
    readonly governor: Governor,
  ) {}

  get description(): string {
    return this.inner.description;
  }

  get(key: string): Promise<StoredObject | null> {
    return this.governor.run(
      requestClass('get', key),
      () => `GET ${key}`,
      () => this.inner.get(key),
    );
  }

  head(key: string): Promise<ObjectHead | null> {
    return this.governor.run(
      requestClass('head', key),
      () => `HEAD ${key}`,
      () => this.inner.head(key),
    );
  }

  put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    return this.governor.run(
      requestClass('put', key),
      () => `PUT ${key}`,
      () => this.inner.put(key, body, condition),
    );
  }

  delete(key: string): Promise<void> {
    return this.governor.run(
      requestClass('delete', key),
      () => `DELETE ${key}`,
      () => this.inner.delete(key),
    );
  }

  deleteMany(keys: readonly string[]): Promise<void> {
    return this.governor.run(
      requestClass('deleteMany', keys[0]),
      () => `DELETE ${keys.length} keys`,
      () => this.inner.deleteMany(keys),
    );
  }

  list(options?: ListOptions): Promise<ListPage> {
    const prefix = options?.prefix ?? options?.startAfter;
    return this.governor.run(
      requestClass('list', prefix),
      () => `LIST ${prefix ?? ''}`,
      () => this.inner.list(options),
    );
  }

  async close(): Promise<void> {
    this.governor.close();
    return this.inner.close();
  }
}

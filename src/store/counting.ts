/**
 * An ObjectStore wrapper that reports each request's operation (for metrics), nothing else.
 */
import type { ListOptions, ObjectStore, PutCondition } from './types.js';

export function countingStore(inner: ObjectStore, count: (op: string) => void): ObjectStore {
  return {
    get description() {
      return inner.description;
    },
    get: (key: string) => (count('get'), inner.get(key)),
    head: (key: string) => (count('head'), inner.head(key)),
    put: (key: string, body: Uint8Array, condition?: PutCondition) => (count('put'), inner.put(key, body, condition)),
    delete: (key: string) => (count('delete'), inner.delete(key)),
    deleteMany: (keys: readonly string[]) => (count('delete_many'), inner.deleteMany(keys)),
    list: (options?: ListOptions) => (count('list'), inner.list(options)),
    close: () => inner.close(),
  };
}

/** Every key a store lists, through all its pages (listAll's options: prefix, startAfter, page size). */
import { listAll } from '../../src/store/keys.js';
import type { ObjectStore } from '../../src/store/types.js';

export async function allKeys(store: ObjectStore, options: Parameters<typeof listAll>[1] = {}): Promise<string[]> {
  const out: string[] = [];
  for await (const k of listAll(store, options)) out.push(k);
  return out;
}

/**
 * What the conformance suite needs from each store implementation: a fresh, empty store (its own
 * namespace) per test, and a way to clean it up.
 */
import type { ObjectStore } from '../../src/store/types.js';

export interface StoreFixture {
  store: ObjectStore;
  /** Opens a second, independent client on the same namespace (another "node"). */
  reopen(): Promise<ObjectStore>;
  cleanup(): Promise<void>;
}

export type OpenFixture = () => Promise<StoreFixture>;

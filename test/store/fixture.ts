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
  /**
   * The store may report a lost conditional race as AMBIGUOUS_WRITE instead of
   * PRECONDITION_FAILED (S3: a server such as Ceph RGW answers some racing losers with a 500,
   * whose outcome only a read can settle). Local stores never may.
   */
  ambiguousLosers?: boolean;
}

export type OpenFixture = () => Promise<StoreFixture>;

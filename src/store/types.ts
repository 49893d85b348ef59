/**
 * The `ObjectStore` interface: the one bucket every node of a cluster shares (docs/architecture.md).
 *
 * Contract, the same for every implementation (test/store/conformance.ts checks it):
 * - Keys are validated by `store/keys.ts` (`BadKey` before any I/O); listings are in UTF-8 byte
 *   order, which is what S3 uses.
 * - `put` with `{ ifNoneMatch: '*' }` creates only if absent; with `{ ifMatch: etag }` replaces
 *   only the version with that etag. Exactly one of any number of racing conditional writers
 *   wins; every loser gets `PreconditionFailed` and the object holds the winner's body.
 * - A conditional write whose outcome is unknown (a timeout, an S3 5xx or 409 after retries)
 *   rejects with `AmbiguousWrite`, never with success or a clean `PreconditionFailed`; the
 *   caller reads back to resolve it. The S3 store settles it itself where a read proves it: the
 *   object now holds exactly our body → success. So a caller that must know *it* won writes a
 *   body unique to itself (keepwork's leases, holds and links carry nodeId, epoch, generation).
 * - `delete` takes no precondition (as docs/alarm-index.md assumes of the bucket) and succeeds for a missing key.
 * - Etags are opaque unquoted strings; equal bodies written to the same store have equal etags.
 * - Transient failures are retried inside the store within `storeAttemptsMax`; what still
 *   fails rejects with `StoreUnavailable`.
 */

export type PutCondition = { ifNoneMatch: '*' } | { ifMatch: string } | Record<string, never>;

export interface StoredObject {
  body: Uint8Array;
  etag: string;
}

export interface ObjectHead {
  etag: string;
  size: number;
}

export interface ListOptions {
  /** Only keys starting with this string. */
  prefix?: string;
  /** Only keys strictly after this one (it need not exist). */
  startAfter?: string;
  /**
   * At most this many keys (1..LIST_ASK_MAX; default 1000). A page may hold fewer and still have
   * a `continuation`: S3 returns at most 1,000 keys per page (LIST_MAX_KEYS), the local stores up
   * to `maxKeys`.
   */
  maxKeys?: number;
  /** The `continuation` of the previous page. */
  continuation?: string;
}

export interface ListPage {
  keys: string[];
  /** Present when more keys may follow; pass it back as `continuation`. */
  continuation?: string;
}

export interface ObjectStore {
  /** A short description for logs and errors (`fs:/path`, `s3://bucket/prefix`, `memory`). */
  readonly description: string;
  get(key: string): Promise<StoredObject | null>;
  head(key: string): Promise<ObjectHead | null>;
  put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }>;
  delete(key: string): Promise<void>;
  deleteMany(keys: readonly string[]): Promise<void>;
  list(options?: ListOptions): Promise<ListPage>;
  /** Releases sockets, file handles and locks. */
  close(): Promise<void>;
}

/** The most keys S3 returns in one page, and the default page size. */
export const LIST_MAX_KEYS = 1000;
/** The largest `maxKeys` a caller may ask for (a local store answers it in one page). */
export const LIST_ASK_MAX = 10_000;

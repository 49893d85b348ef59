/**
 * A bounded LRU of actors' committed state (committed-state.ts), so a walk over the index reads
 * each actor's chain about once without keeping every actor in memory. A Map keeps insertion
 * order: a hit or a put moves the entry to the end, and the first entry is the least recently used.
 */
import type { ActorAddress } from '../core/address.js';
import type { ObjectStore } from '../store/types.js';
import { readCommitted, type CommittedActor } from './committed-state.js';

export class CommittedCache {
  private readonly map = new Map<string, CommittedActor>();
  reads = 0;

  constructor(
    private readonly store: ObjectStore,
    private readonly workDir: string,
    private readonly max = 4096,
  ) {}

  /** Number of actors held (never more than `max`). */
  get size(): number {
    return this.map.size;
  }

  put(actor: CommittedActor): void {
    const key = actor.address.key;
    this.map.delete(key);
    this.map.set(key, actor);
    while (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }

  async get(a: ActorAddress, seqs?: number[]): Promise<CommittedActor> {
    const { key } = a;
    const hit = this.map.get(key);
    if (!hit) return this.read(a, seqs);
    this.map.delete(key); // most recently used now
    this.map.set(key, hit);
    return hit;
  }

  /** Reads the head again (bypassing the cache) and remembers it. */
  async read(a: ActorAddress, seqs?: number[]): Promise<CommittedActor> {
    this.reads++;
    const actor = await readCommitted(this.store, a, this.workDir, seqs);
    this.put(actor);
    return actor;
  }
}

/**
 * `ChainPosition`: where one actor's local copy stands against its chain in the bucket
 * (docs/architecture.md) — the head link it equals, how far into the WAL the last link reached, the counters the link
 * policy decides from (link-policy.ts), the recent snapshots retention keeps, and, for an actor kept
 * in memory, the images. Plain state, no I/O: the take path (replica-take.ts) sets it from the
 * bucket and the sidecar, the upload path (replica.ts) moves it on with every link, and the
 * sidecar records it (`sidecar()`).
 */
import type { LinkKind } from './link.js';
import { diffImages } from './memory-image.js';
import type { PageDelta } from './pages.js';
import type { Sidecar } from './sidecar.js';
import type { WalCursor } from './wal.js';

export interface Head {
  seq: number;
  etag: string;
}

/** A link that landed as the chain's new head: `bytes` of payload, written at `atMs`; `cursor`, where its WAL capture stopped. */
export interface LandedLink extends Head {
  kind: LinkKind;
  bytes: number;
  atMs: number;
  cursor: WalCursor | null;
}

/** An actor kept in memory: the image the bucket's head equals, and the one captured for the next link. */
export interface InMemory {
  pageSize: number;
  uploaded: Buffer;
  captured: Buffer | null;
}

export class ChainPosition {
  head: Head | null = null;
  cursor: WalCursor | null = null;
  deleted = false;
  linksSinceSnapshot = 0;
  linksSinceCheckpoint = 0;
  deltaBytesSinceSnapshot = 0;
  snapshotBytes = 0;
  snapshots: { seq: number; atMs: number }[] = [];
  /** Set when the actor lives in memory (takeInMemory): no local file, WAL or sidecar. */
  memory: InMemory | null = null;
  /** Commits in the local file past the sidecar's cursor that take() adopted (uploaded from start()). */
  unuploaded = 0;
  /** The take found nothing in the bucket for the actor (a local-only or new actor). */
  foundNothing = false;

  /**
   * The pages an actor in memory changed since the head's image (`now`, its image at the capture),
   * kept as the image the next link carries.
   */
  captureMemory(m: InMemory, now: Buffer): PageDelta | null {
    const delta = diffImages(m.uploaded, now, m.pageSize);
    m.captured = delta ? now : null; // an unchanged image is not kept: it would only outlive its use
    return delta;
  }

  /** `link` went up as the new head: the position moves on to it, with the counters the link policy reads. */
  landed(link: LandedLink): void {
    this.head = { seq: link.seq, etag: link.etag };
    if (this.memory?.captured) this.memory.uploaded = this.memory.captured;
    this.cursor = link.cursor ?? this.cursor;
    this.deleted = link.kind === 'tombstone';
    this.linksSinceCheckpoint++;
    if (link.kind === 'snapshot') {
      this.linksSinceSnapshot = 0;
      this.deltaBytesSinceSnapshot = 0;
      this.snapshotBytes = link.bytes;
      this.snapshots = [...this.snapshots, { seq: link.seq, atMs: link.atMs }].slice(-3);
    } else {
      this.linksSinceSnapshot++;
      this.deltaBytesSinceSnapshot += link.bytes;
    }
  }

  /** The sidecar recording this position under the hold `generation` (undefined while there is no head). */
  sidecar(generation: number): Sidecar | undefined {
    if (!this.head) return undefined;
    return {
      seq: this.head.seq,
      etag: this.head.etag,
      generation,
      cursor: this.cursor,
      linksSinceSnapshot: this.linksSinceSnapshot,
      deltaBytesSinceSnapshot: this.deltaBytesSinceSnapshot,
      snapshotBytes: this.snapshotBytes,
      snapshots: this.snapshots,
    };
  }
}

/**
 * The replica's pure decisions (replication/link-policy.ts): snapshot or delta, checkpoint due, retention.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { checkpointDue, nextLinkKind, pruneBelow } from '../../src/replication/link-policy.js';

const s = { snapshotEveryLinks: 10, checkpointEveryLinks: 4, checkpointWalBytes: 1_000 };
const since = (linksSinceSnapshot: number, deltaBytesSinceSnapshot: number, snapshotBytes: number) => ({
  linksSinceSnapshot,
  deltaBytesSinceSnapshot,
  snapshotBytes,
});

describe('snapshot or delta', () => {
  it('a chain (re)starts with a snapshot, and a capture with no delta is a snapshot', () => {
    assert.equal(nextLinkKind(true, 10, since(0, 0, 4096), s), 'snapshot');
    assert.equal(nextLinkKind(false, null, since(0, 0, 4096), s), 'snapshot');
  });
  it('a small delta is a delta', () => {
    assert.equal(nextLinkKind(false, 10, since(0, 0, 4096), s), 'delta');
    assert.equal(nextLinkKind(false, 10, since(8, 100, 4096), s), 'delta');
  });
  it('every snapshotEveryLinks links a snapshot: the link that would be the tenth since the last', () => {
    assert.equal(nextLinkKind(false, 10, since(9, 100, 4096), s), 'snapshot');
    assert.equal(nextLinkKind(false, 10, since(8, 100, 4096), { snapshotEveryLinks: 9 }), 'snapshot');
  });
  it('a snapshot once the deltas since the last one would outweigh it (not when they only equal it)', () => {
    assert.equal(nextLinkKind(false, 100, since(3, 3_996, 4096), s), 'delta');
    assert.equal(nextLinkKind(false, 101, since(3, 3_996, 4096), s), 'snapshot');
  });
  it('whatever the counts, the deltas since a snapshot never exceed it without a snapshot following', () => {
    fc.assert(
      fc.property(fc.nat(20), fc.nat(10_000), fc.nat(10_000), fc.integer({ min: 0, max: 5_000 }), (links, before, snap, bytes) => {
        const kind = nextLinkKind(false, bytes, since(links, before, snap), s);
        if (kind === 'delta') assert.ok(before + bytes <= snap && links + 1 < s.snapshotEveryLinks);
        else assert.ok(before + bytes > snap || links + 1 >= s.snapshotEveryLinks);
      }),
    );
  });
});

describe('checkpoint due', () => {
  it('after checkpointEveryLinks links, or once the captured WAL reaches checkpointWalBytes', () => {
    assert.equal(checkpointDue(3, 999, s), false);
    assert.equal(checkpointDue(4, 0, s), true);
    assert.equal(checkpointDue(0, 1_000, s), true);
    assert.equal(checkpointDue(0, 0, s), false);
  });
});

describe('retention', () => {
  const snaps = [
    { seq: 3, atMs: 1_000 },
    { seq: 9, atMs: 5_000 },
    { seq: 14, atMs: 9_000 },
  ];
  it('below the newest snapshot that is not the newest and is older than linkRetentionMs', () => {
    assert.equal(pruneBelow(snaps, 10_000, { linkRetentionMs: 5_000 }), 9);
    assert.equal(pruneBelow(snaps, 10_000, { linkRetentionMs: 6_000 }), 3);
  });
  it('nothing while only the newest snapshot is old enough, or with one snapshot', () => {
    assert.equal(pruneBelow(snaps, 10_000, { linkRetentionMs: 9_500 }), undefined);
    assert.equal(pruneBelow(snaps.slice(-1), 1e9, { linkRetentionMs: 0 }), undefined);
  });
});

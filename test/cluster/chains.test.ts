/**
 * The bucket checks of the cluster tests (chains.ts) must be able to fail: each kind of damage
 * they look for, planted in a memory bucket, is caught; a sound chain passes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { encodeHold, holdKey } from '../../src/leases/records.js';
import { encodeLink } from '../../src/replication/link.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { checkBucket, LinkLedger } from './chains.js';

const A = parseAddress('t/Probe/x');

interface Spec {
  seq: number;
  generation: number;
  nodeId?: string;
  epoch?: number;
  payload?: string;
  kind?: 'snapshot' | 'delta';
}

async function bucketWith(links: Spec[], holdGeneration = 9): Promise<MemoryStore> {
  const store = new MemoryStore();
  for (const l of links) await store.put(linkKey(A, l.seq), link(l), { ifNoneMatch: '*' });
  await store.put(holdKey(A), encodeHold({ nodeId: 'b', epoch: 1, generation: holdGeneration, state: 'held' }));
  return store;
}

function link(l: Spec): Uint8Array {
  const fields = {
    seq: l.seq,
    kind: l.kind ?? ('delta' as const),
    generation: l.generation,
    nodeId: l.nodeId ?? `n${l.generation}`,
    epoch: l.epoch ?? 1,
    atMs: 0,
    pageSize: 4096,
    pageCount: 1,
  };
  return encodeLink(fields, new TextEncoder().encode(l.payload ?? `page of ${l.seq}`));
}

const sound: Spec[] = [
  { seq: 3, generation: 1, kind: 'snapshot' },
  { seq: 4, generation: 1 },
  { seq: 5, generation: 2 },
  { seq: 6, generation: 4 },
];

describe('cluster bucket checks', () => {
  it('pass a sound chain (first kept link above 1)', async () => {
    const chains = await checkBucket(await bucketWith(sound), new LinkLedger());
    assert.deepEqual(
      chains.get('t/Probe/x')!.links.map((l) => l.seq),
      [3, 4, 5, 6],
    );
  });

  it('catch a gap', async () => {
    await assert.rejects(checkBucket(await bucketWith(sound.filter((l) => l.seq !== 5)), new LinkLedger()), /contiguous/);
  });

  it('catch a chain that does not start with a snapshot', async () => {
    await assert.rejects(
      checkBucket(await bucketWith(sound.map((l) => ({ ...l, kind: 'delta' as const }))), new LinkLedger()),
      /must be a snapshot/,
    );
  });

  it('catch a chain that does not restore', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'kw-chains-'));
    try {
      await assert.rejects(checkBucket(await bucketWith(sound), new LinkLedger(), scratch), /does not restore/);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('catch a generation going down', async () => {
    await assert.rejects(
      checkBucket(await bucketWith([...sound, { seq: 7, generation: 3 }]), new LinkLedger()),
      /generation 3 after link 6/,
    );
  });

  it('catch one generation written by two writers', async () => {
    await assert.rejects(
      checkBucket(await bucketWith([...sound, { seq: 7, generation: 4, nodeId: 'other' }]), new LinkLedger()),
      /written by both/,
    );
  });

  it('catch a head above the hold', async () => {
    await assert.rejects(checkBucket(await bucketWith(sound, 3), new LinkLedger()), /above the hold/);
  });

  it('catch a link that does not decode, or names another seq', async () => {
    const store = await bucketWith(sound);
    const body = link({ seq: 7, generation: 4, nodeId: 'n4' });
    body[body.length - 1]! ^= 1;
    await store.put(linkKey(A, 7), body);
    await assert.rejects(checkBucket(store, new LinkLedger()), /does not decode.*checksum/);
    await store.put(linkKey(A, 7), link({ seq: 8, generation: 4, nodeId: 'n4' }));
    await assert.rejects(checkBucket(store, new LinkLedger()), /does not decode.*expected 7/);
  });

  it('catch a link written twice after it was seen', async () => {
    const store = await bucketWith(sound);
    const ledger = new LinkLedger();
    await ledger.observe(store);
    await store.put(linkKey(A, 5), link({ seq: 5, generation: 2, payload: 'other bytes' }));
    await assert.rejects(checkBucket(store, ledger), /written twice/);
  });
});

/**
 * What the cluster tests check in the bucket itself, after the nodes did their worst:
 *
 *   readChains(store)   every chain under `state/`, each link fetched and decoded (decodeLink,
 *                       checksum and seq verified), with the actor's hold record
 *   checkChains(chains) per chain: seqs contiguous from the first kept link to the head, and that
 *                       first link a snapshot (link 1 always is; retention keeps from a snapshot);
 *                       generations never decrease along the chain; one generation was written by
 *                       one (nodeId, epoch) only; the hold's generation is at least the head's
 *   restoreAll(…)       every chain restores (restoreChain) to a database that passes integrity_check
 *   LinkLedger          etags seen at earlier points of a test; at the end each of those links must
 *                       still be there with the same etag — no seq of any chain was written twice
 *                       (retention is 24 h, so nothing is legitimately deleted during a test)
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { formatAddress, nameHex, type ActorAddress } from '../../src/core/address.js';
import { decodeHold, holdKey, type HoldRecord } from '../../src/leases/records.js';
import { restoreChain } from '../../src/replication/chain.js';
import { decodeLink, type LinkHeader } from '../../src/replication/link.js';
import { parseLinkKey } from '../../src/replication/state-keys.js';
import { listAll } from '../../src/store/keys.js';
import type { ObjectStore } from '../../src/store/types.js';

export interface ChainLink {
  key: string;
  seq: number;
  etag: string;
  header: LinkHeader;
}

export interface Chain {
  address: ActorAddress;
  links: ChainLink[];
  hold: HoldRecord | null;
}

/** Every chain in the bucket by actor address (`tenant/Class/name`). */
export async function readChains(store: ObjectStore): Promise<Map<string, Chain>> {
  const chains = new Map<string, Chain>();
  for await (const key of listAll(store, { prefix: 'state/' })) {
    const parsed = parseLinkKey(key);
    assert.ok(parsed, `a key under state/ that is no link key: ${key}`);
    const obj = await store.get(key);
    assert.ok(obj, `link ${key} vanished while being read`);
    let header: LinkHeader;
    try {
      header = decodeLink(obj.body, parsed.seq).header;
    } catch (e) {
      throw new assert.AssertionError({ message: `link ${key} does not decode: ${(e as Error).message}` });
    }
    const name = formatAddress(parsed.address);
    let chain = chains.get(name);
    if (!chain) {
      const h = await store.get(holdKey(parsed.address));
      chain = { address: parsed.address, links: [], hold: h ? decodeHold(h.body) : null };
      chains.set(name, chain);
    }
    chain.links.push({ key, seq: parsed.seq, etag: obj.etag, header });
  }
  for (const c of chains.values()) c.links.sort((a, b) => a.seq - b.seq);
  return chains;
}

export function checkChains(chains: Map<string, Chain>): void {
  for (const [name, { links, hold }] of chains) {
    const first = links[0]!.seq;
    assert.equal(
      links[0]!.header.kind,
      'snapshot',
      `chain ${name}: its first link (${first}) must be a snapshot, or no node can restore it\n${describeChain(links)}`,
    );
    links.forEach((l, i) =>
      assert.equal(l.seq, first + i, `chain ${name}: seqs must be contiguous from ${first}; found ${links.map((x) => x.seq).join(',')}`),
    );
    const writers = new Map<number, string>();
    for (let i = 0; i < links.length; i++) {
      const h = links[i]!.header;
      if (i > 0) {
        const prev = links[i - 1]!.header;
        assert.ok(
          h.generation >= prev.generation,
          `chain ${name}: link ${h.seq} has generation ${h.generation} after link ${prev.seq} with ${prev.generation}\n${describeChain(links)}`,
        );
      }
      const writer = `${h.nodeId}/${h.epoch}`;
      const seen = writers.get(h.generation);
      assert.ok(
        seen === undefined || seen === writer,
        `chain ${name}: generation ${h.generation} written by both ${seen} and ${writer}\n${describeChain(links)}`,
      );
      writers.set(h.generation, writer);
    }
    const head = links[links.length - 1]!.header;
    assert.ok(hold, `chain ${name} has links but no hold record`);
    assert.ok(
      hold.generation >= head.generation,
      `chain ${name}: head link ${head.seq} has generation ${head.generation}, above the hold's ${hold.generation}`,
    );
  }
}

export function describeChain(links: ChainLink[]): string {
  return links.map((l) => `  ${l.seq} ${l.header.kind} gen ${l.header.generation} by ${l.header.nodeId}/${l.header.epoch}`).join('\n');
}

/** Etags of links seen earlier in a test, checked again at the end. */
export class LinkLedger {
  private readonly seen = new Map<string, string>();

  async observe(store: ObjectStore): Promise<Map<string, Chain>> {
    const chains = await readChains(store);
    this.verify(chains);
    for (const c of chains.values()) for (const l of c.links) this.seen.set(l.key, l.etag);
    return chains;
  }

  verify(chains: Map<string, Chain>): void {
    const now = new Map<string, string>();
    for (const c of chains.values()) for (const l of c.links) now.set(l.key, l.etag);
    for (const [key, etag] of this.seen) {
      assert.ok(now.has(key), `link ${key} seen earlier in this test is gone`);
      assert.equal(now.get(key), etag, `link ${key} was written twice (its etag changed)`);
    }
  }

  get size(): number {
    return this.seen.size;
  }
}

/** Restores every chain that does not end in a tombstone into `scratch`; each must pass integrity_check. */
export async function restoreAll(store: ObjectStore, chains: Map<string, Chain>, scratch: string): Promise<void> {
  mkdirSync(scratch, { recursive: true });
  for (const [name, { address, links }] of chains) {
    if (links.at(-1)!.header.kind === 'tombstone') continue;
    const out = join(scratch, `${address.tenant}-${address.className}-${nameHex(address.name)}.db`);
    try {
      const r = await restoreChain(store, address, out);
      assert.equal(r.state, 'restored', `chain ${name} restores`);
      const db = new Database(out, { readonly: true });
      try {
        assert.equal(db.pragma('integrity_check', { simple: true }), 'ok', `chain ${name}: the restored database passes integrity_check`);
      } finally {
        db.close();
      }
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      throw new assert.AssertionError({ message: `chain ${name} does not restore: ${(e as Error).message}\n${describeChain(links)}` });
    } finally {
      rmSync(out, { force: true });
    }
  }
}

/**
 * The end-of-test check: every chain sound (and restorable, when a scratch folder is given),
 * every link seen earlier unchanged.
 */
export async function checkBucket(store: ObjectStore, ledger: LinkLedger, scratch?: string): Promise<Map<string, Chain>> {
  const chains = await ledger.observe(store);
  assert.ok(chains.size > 0, 'the bucket holds no chain at all');
  checkChains(chains);
  if (scratch) await restoreAll(store, chains, scratch);
  return chains;
}

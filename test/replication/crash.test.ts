/**
 * kill -9 of a node process in the middle of its uploads, then restore (docs/architecture.md):
 *
 *   crash-node.ts (a child process)  durable put(1), put(2), … per actor, plain notes beside them
 *        │ prints `ack <actor> <v>` per acknowledged durable call
 *        └─ SIGKILL after ~N acknowledgements (+ a few ms, so the kill lands at varied points)
 *   then, in this process:
 *     - the chain: seqs 1..head with no gap, each link decodes (checksum) and names its own seq,
 *       link 1 is a snapshot — an If-None-Match create was never overwritten
 *     - a direct restore of the chain: the database passes integrity_check and holds a state that
 *       existed (values 1..m, notes 1..k: no holes), with every acknowledged value (m ≥ last ack)
 *     - a second node (a NEW data dir, or the killed process's own data dir with its sidecar)
 *       serves that state, writes more, and the links the killed process wrote stay unchanged
 *       while the new ones continue the chain; after its clean stop the bucket equals what it served
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { parseAddress, type ActorAddress } from '../../src/core/address.js';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import { listChain, restoreChain } from '../../src/replication/chain.js';
import { decodeLink, type LinkHeader } from '../../src/replication/link.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { decodeNode, nodeKey } from '../../src/leases/records.js';
import { openStore } from '../../src/store/open.js';
import type { ObjectStore } from '../../src/store/types.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const CRASH_NODE = fileURLToPath(new URL('../fixtures/crash-node.ts', import.meta.url));
const DIE_WITH_PARENT = fileURLToPath(new URL('../../support/die-with-parent.mjs', import.meta.url));
const LEDGER = new URL('../fixtures/classes/ledger.ts', import.meta.url).href;
const ACTORS = ['a0', 'a1'];
const addressOf = (name: string) => parseAddress(`crash/Ledger/${name}`);
/** Each kill: once every actor has this many acknowledgements, plus this many ms. */
const KILLS = [
  { acks: 6, extraMs: 0 },
  { acks: 20, extraMs: 3 },
  { acks: 45, extraMs: 11 },
];
// Bounds for a stuck child, not for speed: 45 acks per actor took over 12 s at load 15 on the 2 cores.
const CHILD_ACKS_WAIT_MS = 45_000;
/**
 * A short node lease for both nodes (3 s: at 2 s a loaded 2-core machine once missed a renewal of
 * the node under test). The killed node's lease stays live until its expiry + grace
 * (≤ 3.5 s after the kill): until then its own data dir cannot start again (the node would be
 * "already running"), and another node's calls are refused with OWNER_UNREACHABLE (the killed
 * holder has no HTTP address). So the second node starts once that time has passed, and its first
 * call per actor is retried on OWNER_UNREACHABLE for at most TAKEOVER_WAIT_MS.
 */
const LEASE = { leasePeriodMs: 3000, graceMs: 500, skewBoundMs: 200 };
const TAKEOVER_WAIT_MS = 30_000;

const tempDir = tempDirs('kw-crash-');

interface Killed {
  /** Per actor, the last acknowledged value (every value 1..last was acknowledged). */
  lastAck: Map<string, number>;
  nodeId: string;
}

/** Runs crash-node.ts until every actor has `acks` acknowledgements, waits `extraMs`, SIGKILLs it. */
function runAndKill(bucketDir: string, dataDir: string, acks: number, extraMs: number): Promise<Killed> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      DIE_WITH_PARENT,
      CRASH_NODE,
      bucketDir,
      dataDir,
      String(ACTORS.length),
      '2',
      '1000000',
      JSON.stringify(LEASE),
    ],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  const lastAck = new Map<string, number>();
  let nodeId = '';
  let reached = false;
  let stderr = '';
  let buffered = '';
  let killed = false;
  const kill = () => {
    if (!killed) child.kill('SIGKILL');
    killed = true;
  };
  const giveUp = setTimeout(kill, CHILD_ACKS_WAIT_MS);
  const problems: string[] = [];
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  child.stdout.on('data', (b: Buffer) => {
    buffered += b.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      const [what, a, b2] = line.split(' ');
      if (what === 'ready') nodeId = a!;
      else if (what === 'ack') {
        const v = Number(b2);
        if (v !== (lastAck.get(a!) ?? 0) + 1) problems.push(`acks of ${a} out of order: ${v} after ${lastAck.get(a!)}`);
        lastAck.set(a!, v);
        if (!reached && ACTORS.every((n) => (lastAck.get(n) ?? 0) >= acks)) {
          reached = true;
          setTimeout(kill, extraMs);
        }
      } else problems.push(`unexpected line from crash-node: ${line}`);
    }
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(giveUp);
      if (problems.length) return reject(new Error(problems.join('\n')));
      if (!reached)
        return reject(
          new Error(`crash-node did not reach ${acks} acknowledgements per actor (exit ${code ?? signal}); stderr:\n${stderr}`),
        );
      if (signal !== 'SIGKILL') return reject(new Error(`crash-node ended by ${code ?? signal}, not by our SIGKILL; stderr:\n${stderr}`));
      resolve({ lastAck, nodeId });
    });
  });
}

/** The chain of `a`: seqs 1..head, every link decoding under its own seq, link 1 a snapshot. */
async function checkChain(store: ObjectStore, a: ActorAddress): Promise<{ etags: string[]; headers: LinkHeader[] }> {
  const seqs = await listChain(store, a);
  assert.ok(seqs.length > 0, 'the chain is not empty');
  assert.deepEqual(
    seqs,
    Array.from({ length: seqs.length }, (_, i) => i + 1),
    'seqs are 1..head, no gap',
  );
  const etags: string[] = [];
  const headers: LinkHeader[] = [];
  for (const seq of seqs) {
    const obj = await store.get(linkKey(a, seq));
    assert.ok(obj, `link ${seq} is readable`);
    const { header } = decodeLink(obj.body, seq); // throws CorruptLink on a bad checksum or another seq
    etags.push(obj.etag);
    headers.push(header);
  }
  assert.equal(headers[0]!.kind, 'snapshot', 'link 1 is a snapshot');
  return { etags, headers };
}

interface LedgerState {
  values: number[];
  notes: string[];
}

/** Restores the chain into a fresh file and reads it: integrity_check must say ok. */
async function restoreDirect(store: ObjectStore, a: ActorAddress): Promise<LedgerState> {
  const path = join(tempDir(), 'restored.db');
  const r = await restoreChain(store, a, path);
  assert.equal(r.state, 'restored');
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    const values = (db.prepare('SELECT v FROM vals ORDER BY v').all() as { v: number }[]).map((x) => x.v);
    const notes = (db.prepare('SELECT text FROM notes ORDER BY id').all() as { text: string }[]).map((x) => x.text);
    return { values, notes };
  } finally {
    db.close();
  }
}

/** A state that existed: values 1..m with m ≥ the last acknowledgement (at most one more), notes 1..k. */
function checkExisted(state: LedgerState, lastAck: number, what: string): void {
  const m = state.values.length;
  assert.deepEqual(
    state.values,
    Array.from({ length: m }, (_, i) => i + 1),
    `${what}: values are 1..m, no hole`,
  );
  assert.ok(m >= lastAck, `${what}: every acknowledged durable value is there (holds 1..${m}, acknowledged 1..${lastAck})`);
  assert.ok(
    m <= lastAck + 1,
    `${what}: at most the one call in flight beyond the acknowledgements (holds 1..${m}, acknowledged 1..${lastAck})`,
  );
  assert.deepEqual(
    state.notes,
    state.notes.map((_, i) => `note ${i + 1}`),
    `${what}: notes are 1..k, no hole`,
  );
}

/** Waits until the killed node's lease (from its record in the bucket) is over, grace included. */
async function waitOutLease(store: ObjectStore, nodeId: string): Promise<void> {
  const obj = await store.get(nodeKey(nodeId));
  assert.ok(obj, `the killed node ${nodeId} has a lease record`);
  const overAt = decodeNode(obj.body).expiresAtMs + LEASE.graceMs + 50;
  const waitMs = overAt - Date.now();
  assert.ok(waitMs <= LEASE.leasePeriodMs + LEASE.graceMs + 1000, `the lease ends within a lease period (+ grace), not in ${waitMs} ms`);
  await waitFor(`the lease of ${nodeId} to end`, Math.max(0, waitMs) + 5_000, () => Date.now() >= overAt, 10);
}

/** The second node's first call on an actor: retried while the killed node still holds it. */
async function takeOver(node: KeepworkNode, name: string): Promise<void> {
  await waitFor(
    `${node.nodeId} to take crash/Ledger/${name} over`,
    TAKEOVER_WAIT_MS,
    async () => (await node.actor(`crash/Ledger/${name}`).call('counter'), true),
    { everyMs: 100, retryOn: (e) => (e as { code?: string }).code === 'OWNER_UNREACHABLE' },
  );
}

async function served(node: KeepworkNode, name: string): Promise<LedgerState> {
  const actor = node.actor(`crash/Ledger/${name}`);
  return { values: await actor.call<number[]>('values'), notes: await actor.call<string[]>('notes') };
}

/**
 * The killed process's own data dir: its WAL held commits the bucket never got. Nothing may fold
 * that WAL before the take decides (the start-up alarm scan once did, opening read-write), and a
 * sidecar whose WAL was folded is not trusted: after more writes the bucket must hold exactly
 * what the node served.
 */

/**
 * One round: kill, check the bucket, then a second node on a new data dir (or the killed one's)
 * takes every actor, writes 5 more durable values and stops; the links of the killed process stay
 * as they were, and the bucket then holds exactly what the second node served.
 */
async function killAndRestore(t: TestContext, kill: { acks: number; extraMs: number }, reuseDataDir: boolean): Promise<void> {
  const bucketDir = join(tempDir(), 'bucket');
  const firstDataDir = join(tempDir(), 'data');
  const killed = await runAndKill(bucketDir, firstDataDir, kill.acks, kill.extraMs);
  const store = openStore(bucketDir);
  await waitOutLease(store, killed.nodeId);
  const node = await startNode({
    bucket: bucketDir,
    dataDir: reuseDataDir ? firstDataDir : join(tempDir(), 'data'),
    classes: { Ledger: LEDGER },
    workerThreads: 2,
    logger: silentLogger(),
    ...LEASE,
  });
  const extra = 5;
  const last = new Map<string, LedgerState>();
  try {
    const before = new Map<string, { etags: string[]; state: LedgerState }>();
    for (const name of ACTORS) {
      const a = addressOf(name);
      const lastAck = killed.lastAck.get(name) ?? 0;
      const { etags, headers } = await checkChain(store, a);
      assert.ok(
        headers.every((h) => h.nodeId === killed.nodeId),
        'every link so far is the killed node’s',
      );
      const restored = await restoreDirect(store, a);
      checkExisted(restored, lastAck, `${name}: the bucket after the kill`);
      await takeOver(node, name);
      const state = await served(node, name);
      checkExisted(state, lastAck, `${name}: the second node's state`);
      if (!reuseDataDir) assert.deepEqual(state, restored, `${name}: a fresh data dir serves exactly the bucket's state`);
      assert.equal(await node.actor(`crash/Ledger/${name}`).call('check'), 'ok');
      before.set(name, { etags, state });
    }
    for (const name of ACTORS) {
      const actor = node.actor(`crash/Ledger/${name}`);
      const m = before.get(name)!.state.values.length;
      for (let v = m + 1; v <= m + extra; v++) assert.equal(await actor.callDurable('put', v), v);
      last.set(name, await served(node, name));
    }
    await node.stop();
    for (const name of ACTORS) {
      const { etags, headers } = await checkChain(store, addressOf(name));
      const old = before.get(name)!.etags;
      assert.deepEqual(etags.slice(0, old.length), old, `${name}: no link of the killed node was written again`);
      assert.ok(etags.length > old.length, `${name}: the second node extended the chain`);
      const oldGeneration = Math.max(...headers.slice(0, old.length).map((h) => h.generation));
      for (const h of headers.slice(old.length)) {
        assert.deepEqual([h.nodeId, h.epoch], [node.nodeId, node.epoch], `${name}: link ${h.seq} comes from the second node`);
        assert.ok(
          h.generation > oldGeneration,
          `${name}: link ${h.seq} is written under a newer hold generation (${h.generation} > ${oldGeneration})`,
        );
      }
    }
    const bucketEqualsServed = async () => {
      for (const name of ACTORS) {
        const restored = await restoreDirect(store, addressOf(name));
        assert.deepEqual(restored, last.get(name), `${name}: after a clean stop, the bucket holds exactly what the second node served`);
      }
    };
    if (reuseDataDir) await t.test('after more writes and a clean stop, the bucket holds exactly what the node served', bucketEqualsServed);
    else await bucketEqualsServed();
  } finally {
    await node.stop();
    await store.close();
  }
}

// Each case takes about 5 s on an idle machine and 10–16 s at load 18 on 2 cores: the bounds are
// for a hung case, not a measure of speed.
describe('replication: kill -9 during uploads, then restore', { timeout: 280_000 }, () => {
  for (const kill of KILLS) {
    it(
      `a new data dir restores every acknowledged durable call (kill after ${kill.acks} acks per actor + ${kill.extraMs} ms)`,
      { timeout: 60_000 },
      async (t) => {
        await killAndRestore(t, kill, false);
      },
    );
  }
  for (const kill of KILLS) {
    it(
      `the killed node's own data dir (local copy and sidecar) comes back with every acknowledged durable call (kill after ${kill.acks} acks per actor + ${kill.extraMs} ms)`,
      { timeout: 60_000 },
      async (t) => {
        await killAndRestore(t, kill, true);
      },
    );
  }
});

/**
 * kill -9 and restart on the node's own data dir: test/fixtures/restart-node.ts is
 * killed in the middle of a stream of plain calls and started again on the same data dir and
 * bucket, 20 times over one bucket and data dir.
 *
 *   - every acknowledged plain call is there after the restart (a plain call replies after the
 *     local commit: the restart must upload the commits its predecessor never did, not set them
 *     aside), and the notes stay 1..k with no hole
 *   - the restarted node serves while its predecessor's lease is still live in the bucket (a lease
 *     of a minute): it fenced that lease at once, holding the data dir's lock, instead of waiting
 *   - a second process on a data dir in use is refused at once, and the first one goes on
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { decodeNode, nodeKey } from '../../src/leases/records.js';
import { openStore } from '../../src/store/open.js';
import { tempDirs } from '../helpers/temp.js';

const RESTART_NODE = fileURLToPath(new URL('../fixtures/restart-node.ts', import.meta.url));
const ACTORS = ['a0', 'a1'];
const ROUNDS = 20;
/** A lease far longer than the test: a restart that waited for it would never serve. */
const LEASE = { leasePeriodMs: 60_000, graceMs: 1_000 };
const STEP_WAIT_MS = 30_000;

const children = new Set<ChildProcessWithoutNullStreams>();
// Before the temp dirs go (hooks run in order): every child still running is killed and waited for.
after(() => Promise.all([...children].map((c) => (c.kill('SIGKILL'), once(c, 'close')))));
const tempDir = tempDirs('kw-restart-');

interface Run {
  child: ChildProcessWithoutNullStreams;
  /** Per actor, from the `state` lines: notes held at start, and whether they were 1..k. */
  state: Map<string, { k: number; ok: boolean }>;
  ready: boolean;
  /** From startNode to the first calls served, in the child (its own report). */
  startMs: number;
  lastAck: Map<string, number>;
  stderr: string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once `pred` holds (checked at every line), rejects if the child exits first or after STEP_WAIT_MS. */
  until(pred: () => boolean, what: string): Promise<void>;
}

function startRun(bucketDir: string, dataDir: string): Run {
  const child = spawn(process.execPath, [
    '--import',
    'tsx',
    RESTART_NODE,
    bucketDir,
    dataDir,
    String(ACTORS.length),
    JSON.stringify(LEASE),
  ]);
  children.add(child);
  const waiters = new Set<() => void>();
  let exited = false;
  let buffered = '';
  const run: Run = {
    child,
    state: new Map(),
    ready: false,
    startMs: 0,
    lastAck: new Map(),
    stderr: '',
    exit: new Promise((resolve) =>
      child.on('close', (code, signal) => {
        exited = true;
        children.delete(child);
        resolve({ code, signal });
        waiters.forEach((w) => w());
      }),
    ),
    until(pred, what) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`${what}: not within ${STEP_WAIT_MS} ms; stderr:\n${run.stderr}`)), STEP_WAIT_MS);
        const check = () => {
          if (pred()) done();
          else if (exited) done(new Error(`${what}: the node exited first; stderr:\n${run.stderr}`));
        };
        const done = (e?: Error) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (e) reject(e);
          else resolve();
        };
        waiters.add(check);
        check();
      });
    },
  };
  child.stderr.on('data', (b: Buffer) => (run.stderr += b.toString()));
  child.stdout.on('data', (b: Buffer) => {
    buffered += b.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      const [what, a, b2, c] = line.split(' ');
      if (what === 'state') run.state.set(a!, { k: Number(b2), ok: c === 'ok' });
      else if (what === 'ready') {
        run.ready = true;
        run.startMs = Number(b2);
      } else if (what === 'ack') run.lastAck.set(a!, Number(b2));
      else run.stderr += `unexpected line: ${line}\n`;
    }
    waiters.forEach((w) => w());
  });
  return run;
}

describe('restart on its own data dir after kill -9', { timeout: 600_000 }, () => {
  it(`keeps every acknowledged plain call and serves at once while the old lease is live (${ROUNDS} kills)`, async (t) => {
    const bucketDir = join(tempDir(), 'bucket');
    const dataDir = join(tempDir(), 'data');
    const store = openStore(bucketDir);
    const acked = new Map<string, number>(ACTORS.map((a) => [a, 0]));
    const readyMs: number[] = [];
    const startMs: number[] = [];
    let lastStderr = '';
    try {
      for (let round = 0; round <= ROUNDS; round++) {
        if (round > 0) {
          const obj = await store.get(nodeKey('r1'));
          assert.ok(obj, 'the killed node has a lease record');
          const record = decodeNode(obj.body);
          assert.equal(record.state, 'live', `round ${round}: the killed node's lease is still live in the bucket`);
          assert.ok(record.expiresAtMs + LEASE.graceMs > Date.now() + 10_000, `round ${round}: and stays live long after the restart`);
        }
        const spawnedAt = performance.now();
        const run = startRun(bucketDir, dataDir);
        await run.until(() => run.ready, `round ${round}: the restarted node serves`);
        readyMs.push(Math.round(performance.now() - spawnedAt));
        startMs.push(run.startMs);
        for (const name of ACTORS) {
          const s = run.state.get(name);
          assert.ok(s, `round ${round}: ${name} was read`);
          assert.ok(s.ok, `round ${round}: ${name}'s notes are 1..${s.k}, no hole`);
          assert.ok(
            s.k >= acked.get(name)!,
            `round ${round}: ${name} holds ${s.k} notes, ${acked.get(name)} were acknowledged before the kill; the restarted node's log:\n${run.stderr}\nthe killed node's log:\n${lastStderr}`,
          );
        }
        if (round === ROUNDS) {
          run.child.kill('SIGKILL');
          await run.exit;
          break;
        }
        const want = 2 + (round % 6) * 3; // kill at varied points of the stream
        await run.until(
          () => ACTORS.every((a) => (run.lastAck.get(a) ?? 0) >= run.state.get(a)!.k + want),
          `round ${round}: ${want} acknowledgements per actor`,
        );
        await new Promise((r) => setTimeout(r, round % 4)); // and a few ms after, so the kill lands anywhere
        run.child.kill('SIGKILL');
        const { signal } = await run.exit;
        assert.equal(signal, 'SIGKILL', `round ${round}: ended by our kill; stderr:\n${run.stderr}`);
        for (const name of ACTORS) acked.set(name, Math.max(acked.get(name)!, run.lastAck.get(name) ?? 0));
        lastStderr = run.stderr;
      }
      t.diagnostic(`spawn → serving, ms (process start, tsx, node start, first calls): ${readyMs.join(' ')}`);
      t.diagnostic(`startNode → first calls served, ms: ${startMs.join(' ')}`);
    } finally {
      await store.close();
    }
  });

  it('a second process on a data dir in use is refused at once, and the first goes on', async () => {
    const bucketDir = join(tempDir(), 'bucket');
    const dataDir = join(tempDir(), 'data');
    const first = startRun(bucketDir, dataDir);
    try {
      await first.until(() => first.ready, 'the first node serves');
      const second = startRun(bucketDir, dataDir);
      const { code } = await second.exit;
      assert.equal(code, 2, `the second process fails to start; stderr:\n${second.stderr}`);
      assert.match(second.stderr, /data dir .* is in use by another keepwork node \(pid \d+/);
      const acks = first.lastAck.get('a0') ?? 0;
      await first.until(() => (first.lastAck.get('a0') ?? 0) > acks + 3, 'the first node goes on');
    } finally {
      first.child.kill('SIGKILL');
      await first.exit;
    }
  });
});

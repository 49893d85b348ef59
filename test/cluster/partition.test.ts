/**
 * Partitions between real network namespaces (test/cluster/netns.ts, scripts/netns-lab.sh): Ceph
 * RGW (scripts/s3-test-server.sh) and three node processes each in a namespace of their own on one
 * bridge; the test's clients and checks run in the root namespace. Each scenario starts three fresh
 * nodes on a fresh prefix of the bucket, lets six Probe actors (two held by each node, n1 the
 * victim) take durable increments through every node, arms each actor's alarm to come due during
 * the fault, applies the fault to n1, heals it, and then checks:
 *
 *   acks      every value a durable call acknowledged is distinct and ≤ the actor's value after heal
 *   chains    every chain sound, one writer (nodeId/epoch) per generation, no link rewritten
 *   alarms    every armed alarm fired (a committed row with its scheduled time) after the heal
 *   fence     (bucket faults) n1 starts no state/alarms/holds write after its lease validity ended
 *             (its keepwork_store_requests_total stands still from then until the heal), and no
 *             link of its epoch was built after that (header atMs)
 *
 *   bucket cut   n1 ↔ RGW dropped both ways; clients still reach n1; the others fence n1 and take its
 *                actors; heal
 *   nodes cut    n1 ↔ n2, n3 dropped both ways; RGW and clients reach everyone; n1 keeps its lease
 *                (still live after the heal); forwarded calls fail meanwhile; heal
 *   one-way      what RGW sends to n1 dropped, what n1 sends arrives (its writes land unanswered);
 *                the others take over; heal
 *   flapping     n1's links to RGW, n2 and n3 alternate between 30 % random loss, cut and clear,
 *                four times (this kernel has no netem: loss is nftables `numgen random`); heal
 *
 * Without root / iproute2 / nftables / namespaces the suite is skipped with a loud message, and
 * fails under CI=true. The lab (namespaces, veths, bridge, rules and every process inside) is torn
 * down however the file ends; a detached watcher does it if this process is killed. The temp
 * folder (RGW's, the nodes') is removed unless KEEPWORK_KEEP_TMP=1.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { decodeHold, decodeNode, holdKey, nodeKey, type NodeRecord } from '../../src/leases/records.js';
import { checkBucket, LinkLedger, readChains } from './chains.js';
import { elapse } from '../helpers/wait.js';
import { call, mustCall } from '../../support/cluster/calls.js';
import { Cluster } from '../../support/cluster/cluster.js';
import type { ClusterNode } from '../../support/cluster/node.js';
import { killLeftovers } from '../../support/cluster/processes.js';
import { REPO } from '../../support/repo.js';
import { waitFor } from '../helpers/wait.js';
import { Lab, labUnavailable } from './netns.js';

const UNAVAILABLE = labUnavailable();
if (UNAVAILABLE) {
  const message = `NO NETWORK NAMESPACES: the partition tests cannot run (${UNAVAILABLE}); they need root, iproute2 and nftables (bash scripts/netns-lab.sh ensure)`;
  if (process.env.CI === 'true') throw new Error(message);
  console.error(`\n!!! ${message} — SKIPPING !!!\n`);
}

const KEEP_TMP = process.env.KEEPWORK_KEEP_TMP === '1';
const RGW_PORT = 7480;
const LEASE_MS = 2_000;
const TIMINGS = {
  leasePeriodMs: LEASE_MS,
  graceMs: 500,
  skewBoundMs: 200,
  alarmSweepMs: 1_000,
  storeRequestTimeoutMs: 1_500,
  forwardTimeoutMs: 2_000,
};
const MARGIN_MS = TIMINGS.leasePeriodMs + TIMINGS.graceMs;
const NODES = ['n1', 'n2', 'n3'] as const;
type NodeName = (typeof NODES)[number];
/** Actor i is first called (and so held) through NODES[i % 3]: n1 holds a0 and a3. */
const ACTORS = Array.from({ length: 6 }, (_, i) => `t/Probe/a${i}`);
const CALL_TIMEOUT_MS = 6_000;

/** Holding a fault for a while is the scenario itself, not a wait for something to happen. */
const holdFault = (ms: number) => elapse(ms);

class Load {
  readonly acked = new Map<string, number[]>(ACTORS.map((a) => [a, []]));
  readonly ok = new Map<NodeName, number>(NODES.map((n) => [n, 0]));
  readonly failed = new Map<NodeName, number>(NODES.map((n) => [n, 0]));
  readonly lastFailure = new Map<NodeName, string>();
  private stopped = false;
  private loops: Promise<void>[] = [];

  ack(actor: string, value: number): void {
    this.acked.get(actor)!.push(value);
  }

  start(nodes: Record<NodeName, ClusterNode>): void {
    this.loops = NODES.map(async (name, k) => {
      for (let i = k; !this.stopped; i++) {
        const actor = ACTORS[i % ACTORS.length]!;
        const r = await call(nodes[name].url, actor, 'slowIncrement', [1], { durable: true, timeoutMs: CALL_TIMEOUT_MS });
        if (r.ok) {
          this.ack(actor, r.result as number);
          this.ok.set(name, this.ok.get(name)! + 1);
        } else {
          this.failed.set(name, this.failed.get(name)! + 1);
          this.lastFailure.set(name, `${r.status} ${r.error}`);
          await elapse(100); // pacing: a node that refuses at once must not spin the CPU
        }
      }
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  total(): number {
    return [...this.ok.values()].reduce((a, b) => a + b, 0);
  }

  summary(): string {
    return NODES.map((n) => `${n} ${this.ok.get(n)} ok / ${this.failed.get(n)} failed (last: ${this.lastFailure.get(n) ?? '-'})`).join(
      '; ',
    );
  }
}

/** Bucket writes (put, put_conditional, delete) of state, alarms and holds a node started, from its /metrics. */
async function stateWrites(node: ClusterNode): Promise<number> {
  const res = await fetch(`${node.url}/metrics`, { signal: AbortSignal.timeout(5_000) });
  assert.equal(res.status, 200);
  let n = 0;
  for (const line of (await res.text()).split('\n')) {
    const m = /^keepwork_store_requests_total\{([^}]*)\} (\d+)/.exec(line);
    if (!m) continue;
    const op = /op="([^"]+)"/.exec(m[1]!)?.[1];
    const area = /area="([^"]+)"/.exec(m[1]!)?.[1];
    if (['put', 'put_conditional', 'delete', 'delete_many'].includes(op!) && ['state', 'alarms', 'holds'].includes(area!))
      n += Number(m[2]);
  }
  return n;
}

interface Scenario {
  t: TestContext;
  lab: Lab;
  c: Cluster;
  nodes: Record<NodeName, ClusterNode>;
  load: Load;
  /** Actors n1 held before the fault. */
  victimActors: string[];
  nodeRecord(nodeId: string): Promise<NodeRecord>;
  holderOf(actor: string): Promise<string>;
}

/**
 * The fence check of a bucket fault that began at `cutAt` on n1: once n1's lease validity is over
 * for sure (cutAt + lease: no renewal sent after cutAt was answered), its count of started writes
 * must stand still until the others have taken every actor it held (and until the heal).
 */
async function fenceCheck(s: Scenario, cutAt: number): Promise<{ writesAtExpiry: number; validityEnd: number }> {
  const n1 = s.nodes.n1;
  const validityEnd = cutAt + LEASE_MS - TIMINGS.skewBoundMs;
  const writesAtCut = await stateWrites(n1);
  await waitFor("n1's lease validity to be over", LEASE_MS + 5_000, () => (Date.now() >= cutAt + LEASE_MS ? true : undefined), 50);
  const writesAtExpiry = await stateWrites(n1);
  await waitFor(`n2/n3 to take over ${s.victimActors.join(', ')} (${s.load.summary()})`, 60_000, async () => {
    for (const a of s.victimActors) if ((await s.holderOf(a)) === 'n1') return undefined;
    return true;
  });
  // A client still reaches n1: once its stuck uploads gave up, it must refuse (and not take an
  // actor again, which would write a hold) — a node that thinks its lease still valid would try.
  for (const a of s.victimActors)
    await waitFor(`n1 to refuse a call for ${a} with LEASE_LOST`, 30_000, async () => {
      const r = await call(n1.url, a, 'slowIncrement', [1], { timeoutMs: CALL_TIMEOUT_MS });
      assert.ok(!r.ok, `n1 acknowledged a call for ${a} after its lease ended: ${JSON.stringify(r)}`);
      return r.error === 'LEASE_LOST' ? true : undefined;
    });
  const writesAtTakeover = await stateWrites(n1);
  s.t.diagnostic(
    `n1 state/alarms/holds writes started: ${writesAtCut} at the cut, ${writesAtExpiry} at lease end, ${writesAtTakeover} after the takeover`,
  );
  assert.equal(
    writesAtTakeover,
    writesAtExpiry,
    `n1 started ${writesAtTakeover - writesAtExpiry} state/alarms/holds writes after its lease validity ended (at ${validityEnd})`,
  );
  return { writesAtExpiry, validityEnd };
}

/** No link of n1's epoch was built after its validity ended (atMs is the writer's clock, the same kernel clock here). */
async function noLateLinks(s: Scenario, validityEnd: number): Promise<void> {
  const chains = await readChains(s.c.store());
  for (const [name, chain] of chains)
    for (const l of chain.links)
      if (l.header.nodeId === 'n1' && l.header.epoch === s.nodes.n1.epoch)
        assert.ok(
          l.header.atMs <= validityEnd,
          `chain ${name}: link ${l.seq} built by n1 at ${l.header.atMs}, after its validity ended at ${validityEnd}`,
        );
}

let lab: Lab | undefined;
let root = '';
let s3Ip = '';

function runBounded(args: string[], boundMs: number, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const child = spawn(args[0]!, args.slice(1), { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} did not finish within ${boundMs} ms:\n${out}`));
    }, boundMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${args.join(' ')} exited ${code ?? signal}:\n${out}`));
    });
  });
}

async function runScenario(t: TestContext, name: string, fault: (s: Scenario) => Promise<void>): Promise<void> {
  const l = lab!;
  const bucket = `s3://keepwork-test/${name}-${randomBytes(4).toString('hex')}?endpoint=http://${s3Ip}:${RGW_PORT}&region=us-east-1`;
  const c = Cluster.create(name, bucket, root);
  const load = new Load();
  let failed = true;
  try {
    // The nodes listen on their namespaces' private addresses; these tests are about partitions, so
    // they serve open (--insecure-no-auth) rather than with tokens (test/cluster/cluster-auth.test.ts).
    const open = { set: TIMINGS, args: ['--insecure-no-auth'] };
    const started = await Promise.all(NODES.map((n) => c.start(n, { ...open, host: l.host(n).ip, launcher: l.host(n).launcher })));
    const nodes = Object.fromEntries(NODES.map((n, i) => [n, started[i]!])) as Record<NodeName, ClusterNode>;
    const store = c.store();
    const s: Scenario = {
      t,
      lab: l,
      c,
      nodes,
      load,
      victimActors: [],
      nodeRecord: async (id) => decodeNode((await store.get(nodeKey(id)))!.body),
      holderOf: async (a) => decodeHold((await store.get(holdKey(parseAddress(a))))!.body).nodeId,
    };
    for (const [i, a] of ACTORS.entries())
      load.ack(a, await mustCall(nodes[NODES[i % 3]!].url, a, 'slowIncrement', [1], { durable: true }));
    for (const a of ACTORS) if ((await s.holderOf(a)) === 'n1') s.victimActors.push(a);
    assert.deepEqual(s.victimActors, ['t/Probe/a0', 't/Probe/a3'], 'the first call through a node makes it the holder');
    const ledger = new LinkLedger();
    await ledger.observe(store);
    load.start(nodes);
    await waitFor(`12 acknowledged durable calls before the fault (${load.summary()})`, 30_000, () =>
      load.total() >= 12 ? true : undefined,
    );
    // Each actor's alarm comes due while the fault is on.
    const alarmAt = new Map<string, number>();
    const at = Date.now() + 2_000;
    for (const [i, a] of ACTORS.entries()) {
      assert.equal(await mustCall(nodes[NODES[i % 3]!].url, a, 'setAlarm', [at], { durable: true, timeoutMs: CALL_TIMEOUT_MS }), at);
      alarmAt.set(a, at);
    }
    await ledger.observe(store);

    await fault(s);
    l.heal();

    // Serving again: the healthy nodes acknowledge durable calls after the heal.
    const okAfter = { n2: load.ok.get('n2')!, n3: load.ok.get('n3')! };
    await waitFor(`n2 and n3 to acknowledge durable calls after the heal (${load.summary()})`, 60_000, () =>
      load.ok.get('n2')! >= okAfter.n2 + 3 && load.ok.get('n3')! >= okAfter.n3 + 3 ? true : undefined,
    );
    await load.stop();
    t.diagnostic(`calls: ${load.summary()}`);

    // acks: nothing acknowledged is lost.
    for (const a of ACTORS) {
      const acked = load.acked.get(a)!;
      assert.equal(
        new Set(acked).size,
        acked.length,
        `${a}: a value acknowledged twice (an acknowledged increment lost): ${acked.join(',')}`,
      );
      const value = await waitFor(`${a} to answer after the heal`, 30_000, async () => {
        const r = await call(nodes.n2.url, a, 'value', [], { timeoutMs: CALL_TIMEOUT_MS });
        return r.ok ? (r.result as number) : undefined;
      });
      const max = Math.max(...acked);
      assert.ok(value >= max, `${a}: value ${value} after the heal, but ${max} was acknowledged`);
    }
    // alarms: every armed alarm fired.
    await waitFor('every armed alarm to have fired', 20 * MARGIN_MS, async () => {
      for (const a of ACTORS) {
        const r = await call(nodes.n2.url, a, 'fired', [], { timeoutMs: CALL_TIMEOUT_MS });
        if (!r.ok || !(r.result as { scheduled: number }[]).some((f) => f.scheduled === alarmAt.get(a))) return undefined;
      }
      return true;
    });
    // chains: one writer per generation, no link rewritten.
    await checkBucket(store, ledger, join(c.root, 'restore'));
    failed = false;
  } finally {
    await load.stop();
    l.heal();
    await c.dispose(t, failed);
    if (failed && !KEEP_TMP) rmSync(c.root, { recursive: true, force: true });
  }
}

describe(
  'partitions between network namespaces (RGW and three nodes)',
  { skip: UNAVAILABLE ? `no network namespaces: ${UNAVAILABLE}` : false },
  () => {
    before(
      async () => {
        root = mkdtempSync(join(tmpdir(), 'kw-partition-'));
        lab = Lab.up(['s3', ...NODES], root);
        s3Ip = lab.host('s3').ip;
        Object.assign(process.env, {
          AWS_ACCESS_KEY_ID: 'keepwork-test-access-key',
          AWS_SECRET_ACCESS_KEY: 'keepwork-test-secret-key',
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        });
        const env = { ...process.env, KEEPWORK_RGW_DIR: join(root, 'rgw'), KEEPWORK_RGW_HOST: s3Ip, KEEPWORK_RGW_PORT: String(RGW_PORT) };
        await runBounded([...lab.host('s3').launcher, 'bash', 'scripts/s3-test-server.sh', 'up'], 600_000, env);
      },
      { timeout: 660_000 },
    );

    after(() => {
      const n = killLeftovers();
      const leftovers = lab?.leftovers() ?? [];
      lab?.down();
      const remaining = lab?.leftovers() ?? [];
      if (root && !KEEP_TMP) rmSync(root, { recursive: true, force: true });
      assert.equal(n, 0, `${n} node processes were still running after the tests`);
      assert.deepEqual(remaining, [], `the lab left ${remaining.join(', ')} behind (before down: ${leftovers.join(', ')})`);
    });

    it(
      'a node cut from the bucket but not from clients stops writing when its lease ends; the others take over',
      { timeout: 180_000 },
      (t) =>
        runScenario(t, 'bucketcut', async (s) => {
          const cutAt = Date.now();
          s.lab.cut('n1', [s3Ip], 'both');
          const { validityEnd } = await fenceCheck(s, cutAt);
          s.lab.heal('n1');
          await noLateLinks(s, validityEnd);
        }),
    );

    it(
      'a node cut from the other nodes but not from the bucket keeps its lease; forwarded calls fail until the heal',
      { timeout: 180_000 },
      (t) =>
        runScenario(t, 'nodecut', async (s) => {
          const before = { n1: s.load.ok.get('n1')!, n2: s.load.failed.get('n2')!, n3: s.load.failed.get('n3')! };
          const cutAt = Date.now();
          s.lab.cut('n1', [s.lab.host('n2').ip, s.lab.host('n3').ip], 'both');
          await waitFor(`calls through n1 acknowledged and forwards to n1 failing during the cut (${s.load.summary()})`, 60_000, () =>
            s.load.ok.get('n1')! >= before.n1 + 3 && s.load.failed.get('n2')! > before.n2 && s.load.failed.get('n3')! > before.n3
              ? true
              : undefined,
          );
          await holdFault(Math.max(0, cutAt + 2 * MARGIN_MS - Date.now()));
          s.lab.heal('n1');
          const rec = await s.nodeRecord('n1');
          assert.equal(rec.state, 'live', 'n1 kept its lease through the cut');
          assert.equal(rec.epoch, s.nodes.n1.epoch);
          for (const a of s.victimActors) assert.equal(await s.holderOf(a), 'n1', `${a} stayed with n1`);
        }),
    );

    it(
      'a one-way cut (the bucket’s answers to a node dropped, its requests arrive): it stops writing when its lease ends',
      { timeout: 180_000 },
      (t) =>
        runScenario(t, 'oneway', async (s) => {
          const cutAt = Date.now();
          s.lab.cut('n1', [s3Ip], 'in');
          const { validityEnd } = await fenceCheck(s, cutAt);
          s.lab.heal('n1');
          await noLateLinks(s, validityEnd);
        }),
    );

    it('a flapping link (random loss, cut, clear, four times) loses no acknowledged call', { timeout: 180_000 }, (t) =>
      runScenario(t, 'flapping', async (s) => {
        const peers = [s3Ip, s.lab.host('n2').ip, s.lab.host('n3').ip];
        for (let i = 0; i < 4; i++) {
          s.lab.loss('n1', peers, 30);
          await holdFault(1_500);
          s.lab.heal('n1');
          s.lab.cut('n1', peers, 'both');
          await holdFault(1_000);
          s.lab.heal('n1');
          await holdFault(1_000);
        }
      }),
    );
  },
);

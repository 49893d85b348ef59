/**
 * A node fits the process's open-file limit (main/file-budget.ts): started under a low one
 * (`prlimit --nofile`), it sizes its caches down and serves a burst of new actors without running
 * out of files; out of files all the same, a call is refused with OVERLOADED (nothing ran) and the
 * node reports unhealthy, while its other actors go on. Idle actors give their descriptors back
 * (counted in /proc/<pid>/fd). A tenant's new actors past newActorsPerTenantPerSecond are refused
 * with 503 and Retry-After; existing actors are not.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import { childLines } from '../helpers/child-lines.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURE = new URL('../fixtures/file-limit-node.ts', import.meta.url).pathname;
const LEDGER = new URL('../fixtures/classes/ledger.ts', import.meta.url).href;
const children = new Set<ChildProcessWithoutNullStreams>();
// Before the temp dirs go (hooks run in order): every child still running is killed and waited for.
after(() => Promise.all([...children].map((c) => (c.kill('SIGKILL'), once(c, 'close')))));
const tempDir = tempDirs('kw-file-limit-');
const linux = process.platform === 'linux' && spawnSync('prlimit', ['--version']).status === 0;

interface Child {
  child: ChildProcessWithoutNullStreams;
  url: string;
  sizes: { dbCacheMax: number; workerConcurrency: number; httpConnectionsMax: number };
  /** The next stdout line that starts with `prefix`. */
  line(prefix: string): Promise<string>;
  stderr(): string;
}

/** The fixture node, under `prlimit --nofile=limit:limit` when `limit` is given. */
async function spawnNode(limit: number | undefined, tunables: Record<string, number> = {}): Promise<Child> {
  const dir = tempDir();
  const args = ['--import', 'tsx', FIXTURE, join(dir, 'bucket'), join(dir, 'data'), JSON.stringify(tunables)];
  const child =
    limit === undefined ? spawn(process.execPath, args) : spawn('prlimit', [`--nofile=${limit}:${limit}`, process.execPath, ...args]);
  children.add(child);
  const { line, stderr } = childLines(child);
  const [, url, dbCacheMax, workerConcurrency, httpConnectionsMax] = (await line('serving')).split(' ');
  const sizes = {
    dbCacheMax: Number(dbCacheMax),
    workerConcurrency: Number(workerConcurrency),
    httpConnectionsMax: Number(httpConnectionsMax),
  };
  return { child, url: url!, sizes, line, stderr };
}

/** Calls `bump` on `actor` through a pooled client: its status, error code and Retry-After. */
function bump(agent: Agent, url: string, actor: string): Promise<{ status: number; error?: string; retryAfter?: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((ok, fail) => {
    const req = request(
      { host: hostname, port, agent, method: 'POST', path: `/v1/actors/${actor}/bump`, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => {
          const body = JSON.parse(text) as { error?: string };
          ok({ status: res.statusCode!, error: body.error, retryAfter: res.headers['retry-after'] });
        });
      },
    );
    req.on('error', fail);
    req.end('[]');
  });
}

const openFds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

describe('a node within its open-file limit', { skip: !linux && 'needs Linux and prlimit', timeout: 300_000 }, () => {
  it('sizes itself to 256 files, serves 200 new actors at once, and answers running out of files with OVERLOADED and 503 health', async () => {
    const n = await spawnNode(256);
    assert.ok(n.sizes.dbCacheMax < 2048 && n.sizes.httpConnectionsMax < 1024, `sized down: ${JSON.stringify(n.sizes)}`);
    const agent = new Agent({ keepAlive: true, maxSockets: Math.min(8, n.sizes.httpConnectionsMax) });
    try {
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => bump(agent, n.url, `files/Ledger/a${i}`)));
      assert.deepEqual(
        answers.filter((a) => a.status !== 200),
        [],
        'every new actor of the burst answered',
      );
      assert.ok(openFds(n.child.pid!) <= 256);
      assert.equal((await fetch(`${n.url}/healthz`)).status, 200);

      n.child.stdin.write('exhaust files/Ledger/a0\n'); // a0's database was closed long ago (LRU)
      assert.equal(await n.line('exhausted'), 'exhausted OVERLOADED files');
      const health = await fetch(`${n.url}/healthz`);
      assert.equal(health.status, 503);
      assert.match(JSON.stringify(await health.json()), /files-exhausted/);
      const status = (await (await fetch(`${n.url}/v1/status`)).json()) as { health: { problems: { kind: string }[] } };
      assert.deepEqual(
        status.health.problems.map((p) => p.kind),
        ['files-exhausted'],
      );
      assert.equal((await bump(agent, n.url, 'files/Ledger/a0')).status, 200, 'with files back, the actor answers again');
      n.child.stdin.write('stop\n');
      await n.line('done');
    } finally {
      agent.destroy();
    }
  });

  it('gives back the descriptors of idle actors: /proc/<pid>/fd returns to where it was before the burst', async () => {
    const n = await spawnNode(undefined, { idleTimeoutMs: 10_000 });
    const pid = n.child.pid!;
    const agent = new Agent({ keepAlive: false, maxSockets: 8 });
    try {
      const before = openFds(pid);
      const answers = await Promise.all(Array.from({ length: 150 }, (_, i) => bump(agent, n.url, `idle/Ledger/a${i}`)));
      assert.ok(answers.every((a) => a.status === 200));
      const peak = openFds(pid);
      // Each open actor holds its database and WAL (and the WAL index) until it is closed.
      assert.ok(peak >= before + 150, `150 open actors hold their files: ${before} → ${peak}`);
      await waitFor(`the idle actors' files closed (${before} before the burst)`, 60_000, () => openFds(pid) <= before + 8, 200);
      n.child.stdin.write('held\n');
      assert.equal(await n.line('held'), 'held 0');
      n.child.stdin.write('stop\n');
      await n.line('done');
    } finally {
      agent.destroy();
    }
  });
});

describe('new actors per tenant per second', () => {
  it('refuses a tenant’s new actors past the rate with 503 OVERLOADED and Retry-After; its existing actors and other tenants go on', async () => {
    const dir = tempDir();
    const node = await startNode({
      bucket: join(dir, 'bucket'),
      dataDir: join(dir, 'data'),
      nodeId: 'r1',
      port: 0,
      classes: { Ledger: LEDGER },
      logger: createLogger({ level: 'error' }),
      newActorsPerTenantPerSecond: 1,
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    try {
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => bump(agent, node.url!, `rate/Ledger/n${i}`)));
      const refused = answers.filter((a) => a.status === 503);
      const created = answers.findIndex((a) => a.status === 200);
      assert.ok(refused.length >= 1 && created >= 0, `one new actor a second: ${JSON.stringify(answers)}`);
      for (const r of refused) {
        assert.equal(r.error, 'OVERLOADED');
        assert.ok(Number(r.retryAfter) >= 1);
      }
      assert.equal((await bump(agent, node.url!, `rate/Ledger/n${created}`)).status, 200, 'an actor that exists is not counted');
      assert.equal((await bump(agent, node.url!, 'other/Ledger/n0')).status, 200, 'another tenant has its own rate');
    } finally {
      agent.destroy();
      await node.stop();
    }
  });
});

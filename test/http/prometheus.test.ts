/**
 * A real Prometheus (Debian's package, 2.42; scripts/prometheus.sh installs it) against a real
 * 3-node cluster, and promtool on what ships in docs/prometheus/:
 *
 *   promtool check config / check rules / test rules   docs/prometheus/{prometheus.yml, alerts.yml, alerts.test.yml}
 *   3 node processes (support/cluster/cluster.ts) ─▶ an index entry of a class no node serves (a steady
 *       index lag), Probe alarms (ran), an extra entry at a wrong time (stale), an entry of an actor the
 *       bucket never had (kept), an alarm that fails twice and then runs (failed, ran)
 *   promtool check metrics on each node's GET /metrics
 *   prometheus (temp folder, loopback port, 1 s scrapes, the shipped alerts.yml) ─▶ PromQL over the HTTP API:
 *       the index lag and the deliveries by outcome of each node equal its GET /v1/status
 *
 * Every wait is on a condition, bounded; Prometheus and the nodes are killed however the test
 * ends, and the temp folder is removed (kept, with the logs, when the test fails). Without
 * prometheus/promtool the test is skipped with a loud message — except under CI=true, where it fails.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { entryKey } from '../../src/alarms/keys.js';
import { parseAddress } from '../../src/index.js';
import { mustCall } from '../../support/cluster/calls.js';
import { withCluster, type Cluster } from '../../support/cluster/cluster.js';
import type { ClusterNode } from '../../support/cluster/node.js';
import { killLeftovers } from '../../support/cluster/processes.js';
import { REPO } from '../../support/repo.js';
import { waitFor } from '../helpers/wait.js';

const DOCS = join(REPO, 'docs/prometheus');
const FAILS_TWICE = join(REPO, 'test/fixtures/classes/fails-twice.ts');
const TENANT = 'prom';
const ALERTS = ['KeepworkIndexLagHigh', 'KeepworkNodeFenced', 'KeepworkDeliveriesFailing', 'KeepworkNodeDown'];

function binaries(): { prometheus: string; promtool: string } | undefined {
  const r = spawnSync('bash', ['scripts/prometheus.sh', 'path'], { cwd: REPO, encoding: 'utf8' });
  const [prometheus, promtool] = r.stdout.trim().split('\n');
  return r.status === 0 && prometheus && promtool ? { prometheus, promtool } : undefined;
}

const bins = binaries();
if (!bins) {
  const message =
    'NO PROMETHEUS: the Prometheus test cannot run; install it with `bash scripts/prometheus.sh ensure` (root) or set KEEPWORK_PROMETHEUS and KEEPWORK_PROMTOOL';
  if (process.env.CI === 'true') throw new Error(message);
  console.error(`\n!!! ${message} — SKIPPING !!!\n`);
}

/** Runs promtool; asserts exit 0, with everything it printed in the message otherwise. */
function promtool(args: string[], input?: string): string {
  const r = runPromtool(args, input);
  assert.equal(r.status, 0, `promtool ${args.join(' ')} exited ${r.status}:\n${r.out}`);
  return r.out;
}

function runPromtool(args: string[], input?: string): { status: number | null; out: string } {
  const r = spawnSync(bins!.promtool, args, { cwd: DOCS, input, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** `promtool check metrics` passes on one node's whole exposition (prom-client's defaults included). */
function checkMetrics(text: string): void {
  assert.match(text, /^# TYPE keepwork_alarm_deliveries_total counter$/m);
  promtool(['check', 'metrics'], text);
}

// ---------------------------------------------------------------------------------------------
// A Prometheus server of our own

const servers = new Set<ChildProcess>();
const killServers = () => servers.forEach((s) => s.exitCode === null && s.signalCode === null && s.kill('SIGKILL'));
process.once('exit', killServers);
after(() => {
  killServers();
  killLeftovers();
});

class Prometheus {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
  ) {}

  /** Starts prometheus scraping `targets` every second, with the shipped alert rules; resolves once it is ready. */
  static async start(dir: string, targets: string[]): Promise<Prometheus> {
    mkdirSync(dir, { recursive: true });
    const config = {
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [join(DOCS, 'alerts.yml')],
      scrape_configs: [{ job_name: 'keepwork', metrics_path: '/metrics', static_configs: [{ targets }] }],
    };
    const configPath = join(dir, 'prometheus.yml');
    writeFileSync(configPath, JSON.stringify(config, null, 2)); // JSON is YAML
    promtool(['check', 'config', configPath]);
    const log = join(dir, 'prometheus.log');
    const child = spawn(
      bins!.prometheus,
      [`--config.file=${configPath}`, `--storage.tsdb.path=${join(dir, 'data')}`, '--web.listen-address=127.0.0.1:0', '--log.level=info'],
      { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    servers.add(child);
    let err = '';
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`prometheus did not listen within 30 s:\n${err}`)), 30_000);
      child.stderr!.on('data', (d: Buffer) => {
        appendFileSync(log, d);
        err += d.toString();
        const m = /msg="Listening on" address=(127\.0\.0\.1:\d+)/.exec(err);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`prometheus exited (${code ?? signal}) before listening:\n${err}`));
      });
    });
    const p = new Prometheus(`http://${address}`, child);
    await waitFor('prometheus to be ready', 30_000, async () => ((await fetch(`${p.url}/-/ready`)).ok ? true : undefined), 200);
    return p;
  }

  async api<T>(path: string): Promise<T> {
    const res = await fetch(`${this.url}/api/v1/${path}`, { signal: AbortSignal.timeout(5_000) });
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  }

  /** An instant PromQL query: each series' labels and value. */
  async query(promql: string): Promise<{ metric: Record<string, string>; value: number }[]> {
    const data = await this.api<{ resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] }>(
      `query?query=${encodeURIComponent(promql)}`,
    );
    assert.equal(data.resultType, 'vector', `${promql} gave a ${data.resultType}`);
    return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// What a node's status page shows

interface Status {
  samples: { atMs: number; lagSeconds: number }[];
  totals: Record<'ran' | 'stale' | 'kept' | 'failed', number>;
}

async function status(n: ClusterNode): Promise<Status> {
  const res = await fetch(`${n.url}/v1/status`, { signal: AbortSignal.timeout(5_000) });
  assert.equal(res.status, 200);
  return (await res.json()) as Status;
}

const host = (n: ClusterNode) => new URL(n.url).host;

/** Non-zero outcomes only: prom-client exports a labelled counter only once it was incremented. */
const nonZero = (totals: Record<string, number>) => Object.fromEntries(Object.entries(totals).filter(([, v]) => v > 0));

async function putEntry(c: Cluster, address: string, dueMs: number, generation: number, nonce: string): Promise<void> {
  await c.store().put(entryKey({ address: parseAddress(address), dueMs, tag: { generation, nonce } }), new Uint8Array());
}

describe('Prometheus', { skip: !bins && 'no prometheus/promtool (see the message above)' }, () => {
  it('promtool accepts the shipped scrape config and alert rules, and the rules pass their unit tests', () => {
    promtool(['check', 'config', 'prometheus.yml']);
    assert.match(promtool(['check', 'rules', 'alerts.yml']), /SUCCESS: 4 rules found/);
    assert.match(promtool(['test', 'rules', 'alerts.test.yml']), /SUCCESS/);
  });

  it(
    'scrapes a 3-node cluster: promtool check metrics passes, and PromQL gives the index lag and deliveries by outcome /v1/status shows',
    {
      timeout: 240_000,
    },
    async (t) => {
      await withCluster(t, 'prometheus', async (c) => {
        const baseArgs = c.startArgs.bind(c);
        c.startArgs = (nodeId, o) => [...baseArgs(nodeId, o), '--class', `FailsTwice=${FAILS_TWICE}`];
        let prom: Prometheus | undefined;
        try {
          // A steady lag: an overdue entry of a class no node serves stays in the index; sweeps step past it.
          const ghostDue = Date.now() - 60_000;
          await putEntry(c, `${TENANT}/Ghost/g1`, ghostDue, 1, 'aa01');
          // kept: an entry of an actor the bucket never had (the empty-bucket rule keeps it, retried after 5 min).
          await putEntry(c, `${TENANT}/Probe/never-created`, Date.now() - 60_000, 1, 'aa02');

          // No node dies here: a long lease keeps a loaded machine from turning a late renewal into LEASE_LOST.
          const nodes = await c.startAll(['n1', 'n2', 'n3'], { set: { leasePeriodMs: 6_000 } });
          prom = await Prometheus.start(join(c.root, 'prometheus'), nodes.map(host));

          // ran: six Probe alarms, set through different nodes; failed ×2 then ran: FailsTwice.
          const soon = Date.now() + 1_500;
          for (let i = 0; i < 6; i++) await mustCall(nodes[i % 3]!.url, `${TENANT}/Probe/p${i}`, 'setAlarm', [soon + i * 100]);
          await mustCall(nodes[0]!.url, `${TENANT}/FailsTwice/f1`, 'setAlarm', [soon]);
          await waitFor('every Probe alarm to fire', 60_000, async () => {
            for (let i = 0; i < 6; i++) {
              const fired = await mustCall<unknown[]>(nodes[i % 3]!.url, `${TENANT}/Probe/p${i}`, 'fired');
              if (fired.length !== 1) return undefined;
            }
            return true;
          });
          // stale: an entry for p0, whose alarm fired, at a time its state does not name (generation 1: any owner may remove it).
          await putEntry(c, `${TENANT}/Probe/p0`, Date.now() - 60_000, 1, 'aa03');

          const sum = async () => {
            const all = await Promise.all(nodes.map(status));
            const s = { ran: 0, stale: 0, kept: 0, failed: 0 };
            for (const st of all) for (const k of Object.keys(s) as (keyof typeof s)[]) s[k] += st.totals[k];
            return s;
          };
          const totals = await waitFor('deliveries of every outcome on the status pages', 90_000, async () => {
            const s = await sum();
            return s.ran >= 7 && s.failed >= 2 && s.stale >= 1 && s.kept >= 1 ? s : undefined;
          });
          t.diagnostic(`deliveries over the cluster (status pages): ${JSON.stringify(totals)}`);
          assert.deepEqual(await mustCall(nodes[0]!.url, `${TENANT}/FailsTwice/f1`, 'fired').then((f) => (f as unknown[]).length), 1);

          // promtool check metrics on what each node serves.
          for (const n of nodes) {
            const text = await (await fetch(`${n.url}/metrics`)).text();
            assert.match(text, /keepwork_index_lag_seconds\{tenant="prom"\}/);
            checkMetrics(text);
          }

          // Prometheus scrapes all three, and loaded the shipped rules.
          await waitFor('prometheus to scrape all three nodes', 30_000, async () => {
            const up = await prom!.query('up{job="keepwork"} == 1');
            return up.length === 3 ? true : undefined;
          });
          const rules = await waitFor('the shipped alert rules to be evaluated', 30_000, async () => {
            const data = await prom!.api<{ groups: { rules: { name: string; health: string; lastError?: string }[] }[] }>('rules');
            const all = data.groups.flatMap((g) => g.rules);
            return all.length === ALERTS.length && all.every((r) => r.health === 'ok') ? all : undefined;
          });
          assert.deepEqual(rules.map((r) => r.name).sort(), [...ALERTS].sort());

          // The index lag: per node, what PromQL says equals the last sample of its status page.
          for (const n of nodes) {
            const promql = `max by (instance) (keepwork_index_lag_seconds{job="keepwork", instance="${host(n)}"})`;
            const seen = await waitFor(`index lag of ${n.nodeId} in prometheus to equal its status page`, 60_000, async () => {
              const [q] = await prom!.query(promql);
              const s = await status(n);
              const last = s.samples.at(-1)?.lagSeconds;
              if (q === undefined || last === undefined) return undefined;
              return Math.abs(q.value - last) < 1e-6 ? { prometheus: q.value, status: last } : undefined;
            });
            t.diagnostic(`${n.nodeId}: index lag ${JSON.stringify(seen)}`);
            // The Ghost entry was 60 s overdue when the test began, so the lag is at least that.
            assert.ok(seen.status >= 60, `lag ${seen.status} s on ${n.nodeId}, expected at least 60 s (the Ghost entry)`);
          }

          // Deliveries by outcome: per node, PromQL equals the status page's totals.
          for (const n of nodes) {
            const promql = `sum by (outcome) (keepwork_alarm_deliveries_total{job="keepwork", instance="${host(n)}"})`;
            const seen = await waitFor(`deliveries of ${n.nodeId} in prometheus to equal its status page`, 60_000, async () => {
              const q = Object.fromEntries((await prom!.query(promql)).map((r) => [r.metric.outcome!, r.value]));
              const s = nonZero((await status(n)).totals);
              return sameCounts(q, s) ? { prometheus: q, status: s } : undefined;
            });
            t.diagnostic(`${n.nodeId}: deliveries ${JSON.stringify(seen)}`);
          }

          // And over the cluster, by outcome, as one query.
          const byOutcome = await waitFor('cluster deliveries in prometheus to equal the status pages', 60_000, async () => {
            const q = Object.fromEntries(
              (await prom!.query('sum by (outcome) (keepwork_alarm_deliveries_total{job="keepwork"})')).map((r) => [
                r.metric.outcome!,
                r.value,
              ]),
            );
            const s = nonZero(await sum());
            return sameCounts(q, s) ? q : undefined;
          });
          assert.ok(
            byOutcome.ran! >= 7 && byOutcome.failed! >= 2 && byOutcome.stale! >= 1 && byOutcome.kept! >= 1,
            JSON.stringify(byOutcome),
          );

          // The lag rule sees the Ghost entry: pending (it needs 2 minutes above 30 s to fire).
          await waitFor('KeepworkIndexLagHigh to be pending or firing for the tenant', 30_000, async () => {
            const data = await prom!.api<{ alerts: { labels: Record<string, string>; state: string }[] }>('alerts');
            return data.alerts.some((a) => a.labels.alertname === 'KeepworkIndexLagHigh' && a.labels.tenant === TENANT) ? true : undefined;
          });
        } finally {
          await prom?.stop();
        }
      });
    },
  );
});

/** Same outcomes with the same counts (zero and absent are the same). */
function sameCounts(a: Record<string, number>, b: Record<string, number>): boolean {
  const x = nonZero(a);
  const y = nonZero(b);
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  return [...keys].every((k) => x[k] === y[k]);
}

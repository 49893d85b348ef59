/**
 * Which suite each test file belongs to, by what it does (not by speed alone):
 *
 *   unit         pure code and in-process runs on a memory bucket and virtual time (InlineActors,
 *                SimClock, MemoryStore): no worker threads of a real node, no child processes,
 *                no network; the whole suite is meant to stay under a minute on two cores
 *   integration  real components together: folder/S3 stores, a real Node with Piscina workers,
 *                HTTP, the CLI and lint scripts as processes, kill -9 of a child node
 *   cluster      several real node processes (test/cluster), the real Prometheus scraping a
 *                cluster, and the simulator's seeds, canaries and unsafe variants
 *
 * A file no rule names is integration: a new test is never silently in the fast suite.
 */
export const SUITES = ['unit', 'integration', 'cluster'] as const;
export type Suite = (typeof SUITES)[number];

/** Paths relative to the repository, a folder ending in "/" or one file; the first match decides. */
const RULES: ReadonlyArray<readonly [string, Suite]> = [
  ['test/cluster/', 'cluster'],
  ['test/sim/findings.test.ts', 'unit'],
  ['test/sim/', 'cluster'],
  ['test/http/prometheus.test.ts', 'cluster'],
  ['test/chaos/', 'unit'],

  ['test/core/tls-material.test.ts', 'integration'], // makes its certificates with openssl
  ['test/core/', 'unit'],
  ['test/client/client.test.ts', 'integration'],
  ['test/client/', 'unit'],
  ['test/leases/', 'unit'],
  ['test/bench/bench-command.test.ts', 'cluster'], // keepwork bench starts node processes
  ['test/bench/', 'unit'],
  ['test/alarms/owner-stores.test.ts', 'integration'],
  ['test/alarms/', 'unit'],
  ['test/workers/', 'unit'],
  ['test/replication/chain.test.ts', 'unit'],
  ['test/replication/replica.test.ts', 'unit'],
  ['test/replication/wal-capture.test.ts', 'unit'],
  ['test/replication/wal-damage.test.ts', 'unit'],
  ['test/replication/wal-synthetic.test.ts', 'unit'],
  ['test/replication/wal-delta.test.ts', 'unit'],
  ['test/replication/pitr.test.ts', 'unit'],
  ['test/store/keys.test.ts', 'unit'],
  ['test/store/default-bucket.test.ts', 'unit'],
  ['test/store/memory.test.ts', 'unit'],
  ['test/store/request-counts.test.ts', 'unit'],
  ['test/store/delete-batch.test.ts', 'unit'],
  ['test/store/latency.test.ts', 'unit'],
  ['test/store/faults.test.ts', 'unit'],
  ['test/store/file-gate.test.ts', 'unit'],
  ['test/store/fs-fsync-queue.test.ts', 'unit'],
  ['test/store/throttle/', 'unit'],
  ['test/ops/actor-cache.test.ts', 'unit'],
  ['test/ops/index-findings.test.ts', 'unit'],
  ['test/main/membership.test.ts', 'unit'],
  ['test/main/access-policy.test.ts', 'unit'],
  ['test/main/peers-allow.test.ts', 'unit'],
  ['test/main/status-feed.test.ts', 'unit'],
  ['test/main/file-budget.test.ts', 'unit'],
  ['test/cli/progress.test.ts', 'unit'],
  ['test/cli/tunables-help.test.ts', 'unit'],
];

export function suiteOf(file: string): Suite {
  const path = file.replace(/\\/g, '/').replace(/^\.\//, '');
  for (const [rule, suite] of RULES) if (rule.endsWith('/') ? path.startsWith(rule) : path === rule) return suite;
  return 'integration';
}

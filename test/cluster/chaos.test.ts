/**
 * The chaos run (test/chaos, docs/testing.md) as a test: two minutes of a fixed seed on three real
 * node processes and a folder bucket, every check over the whole history, and nothing left behind
 * (processes, temp folder). Every node process is killed when this file ends, also on a timeout
 * (support/cluster/processes.ts), and each kills itself once this process is gone.
 *
 * Also: the same seed plans the same operations and faults (the plan's fingerprint).
 *
 * The seed's plan holds pauses, peer cuts, full disks, kill -9, a bucket cut and held writes,
 * clock offsets within the bound among them; its diskFull faults need root (a tmpfs per node):
 * without it they are skipped, said loudly, and the rest runs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fingerprint, planRun } from '../chaos/plan.js';
import { printReport } from '../chaos/report.js';
import { runChaos } from '../chaos/run.js';
import { checkNoLeftovers } from './leftovers.js';

checkNoLeftovers();

const ROOT = process.getuid?.() === 0;
if (!ROOT) console.error('\n!!! NOT ROOT: the chaos run cannot mount its small disks; its diskFull faults are SKIPPED !!!\n');

const SEED = 20_240_601;
const CHAOS_MS = 120_000;

describe('chaos run of real node processes (folder bucket)', () => {
  it('the same seed plans the same operations, faults and bucket profiles', () => {
    const shape = { seed: SEED, chaosMs: CHAOS_MS, nodes: 3 };
    assert.equal(fingerprint(planRun(shape)), fingerprint(planRun(shape)));
    assert.notEqual(fingerprint(planRun(shape)), fingerprint(planRun({ ...shape, seed: SEED + 1 })));
  });

  it(`two minutes of seed ${SEED}: no violation, nothing left behind`, { timeout: 420_000 }, async (t) => {
    const lines: string[] = [];
    const out = (line: string) => lines.push(line);
    const report = await runChaos({ seed: SEED, chaosMs: CHAOS_MS, nodes: 3, stopOnViolation: false, out });
    printReport(report, `npm run chaos -- --seed ${SEED} --minutes 2 --nodes 3`, out);
    const summary = lines.slice(lines.findIndex((l) => l.startsWith('=== chaos run')));
    for (const line of report.violations.length > 0 ? lines : summary) t.diagnostic(line);
    assert.deepEqual(report.leftovers, { processes: 0, tempDir: false, network: [] });
    assert.ok(report.final, 'the run reached its final checks');
    assert.ok(report.final.alarms.runs > 0, 'alarms ran');
    assert.ok(
      Object.values(report.faults).some((n) => n > 0),
      'faults were injected',
    );
    if (!ROOT) t.diagnostic('NOT ROOT: diskFull faults skipped');
    assert.equal(report.violations.length, 0, `first violation: ${report.violations[0]?.message}`);
  });
});

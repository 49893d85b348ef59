/**
 * `keepwork index check [--tenant T] [--repair] [--json]`: is every committed alarm's named entry
 * in the index, and what are the other entries (index-check.ts walks, index-findings.ts judges).
 *
 * Prints one line per finding as it is found (stdout), then a summary with the explanation
 * of each kind seen (docs/alarm-index.md, docs/operations.md); progress goes to stderr. Exit code 2 when a committed alarm is missing,
 * unindexed or unreadable (and was not repaired). Without --repair it only reads the bucket.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SystemClock } from '../core/clock.js';
import { validateTenant } from '../core/address.js';
import { SystemRandom } from '../core/random.js';
import { NonceSource } from '../alarms/keys.js';
import { openExistingBucket } from './open-bucket.js';
import { resolveOptions } from '../core/config.js';
import { checkIndex, type CheckCounts, type Finding } from '../ops/index-check.js';
import { EXPLAIN } from '../ops/index-findings.js';
import { Progress } from './progress.js';

export interface IndexCheckOptions {
  bucket: string;
  tenant?: string;
  repair?: boolean;
  json?: boolean;
}

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? '-' : new Date(ms).toISOString());

function findingLine(f: Finding): string {
  if (f.type === 'actor') {
    const a = f.actor;
    const parts = [
      `alarm ${iso(a.alarmAt)}`,
      `alarm_indexed ${JSON.stringify(a.indexedRaw ?? '')}`,
      `head ${a.headSeq ?? '-'} (generation ${a.generation ?? '-'})`,
    ];
    if (f.expectedKey) parts.push(`expected ${f.expectedKey}`);
    if (a.error) parts.push(`error: ${a.error}`);
    if (f.repairedKey) parts.push(`REPAIRED: listed ${f.repairedKey}`);
    return `actor  ${f.kind.padEnd(15)} ${a.address.key}  ${parts.join('  ')}`;
  }
  const who = f.actor ? `${f.actor.address.key}${f.actor.alarmAt !== null ? ` (committed alarm ${iso(f.actor.alarmAt)})` : ''}` : '';
  return `entry  ${f.kind.padEnd(15)} ${f.key}  ${who}${f.served ? '' : '  [no live node serves this class]'}`.trimEnd();
}

function summaryLines(c: CheckCounts, repair: boolean): string[] {
  const lines = [`${c.actors} actors with a chain, ${c.withAlarm} with a committed alarm; ${c.entries} index entries`];
  lines.push('committed alarms:');
  for (const [k, n] of Object.entries(c.actorKinds))
    lines.push(`  ${k.padEnd(15)} ${String(n).padStart(6)}  ${EXPLAIN[k as keyof typeof EXPLAIN]}`);
  lines.push('index entries:');
  for (const [k, n] of Object.entries(c.entryKinds))
    lines.push(`  ${k.padEnd(15)} ${String(n).padStart(6)}  ${EXPLAIN[k as keyof typeof EXPLAIN]}`);
  if (c.unservedEntries)
    lines.push(
      `  ${c.unservedEntries} entries are for a class or tenant no live node serves: they stay in the index and sweeps step past them (docs/alarm-index.md)`,
    );
  if (repair) lines.push(`repair: listed ${c.repaired} fresh entries; nothing was deleted`);
  return lines;
}

export async function indexCheckCommand(o: IndexCheckOptions): Promise<void> {
  const tenant = o.tenant === undefined ? undefined : validateTenant(o.tenant);
  const config = resolveOptions();
  const clock = new SystemClock();
  const random = new SystemRandom();
  const store = openExistingBucket(o.bucket, { config, clock, random, readOnly: !o.repair });
  const workDir = mkdtempSync(join(tmpdir(), 'keepwork-check-'));
  const progress = new Progress();
  try {
    const counts = await checkIndex({
      store,
      workDir,
      nowMs: clock.now(),
      graceMs: config.graceMs,
      tenant,
      repair: o.repair ? new NonceSource(random) : undefined,
      onFinding: (f) => {
        progress.done();
        console.log(o.json ? JSON.stringify(findingJson(f)) : findingLine(f));
      },
      onProgress: (t) => progress.update(t),
    });
    progress.done();
    if (o.json) console.log(JSON.stringify({ type: 'summary', ...counts }));
    else for (const line of summaryLines(counts, !!o.repair)) console.log(line);
    const problems =
      (counts.actorKinds.missing ?? 0) + (counts.actorKinds.unindexed ?? 0) + (counts.actorKinds.unreadable ?? 0) - counts.repaired;
    if (problems > 0) process.exitCode = 2;
  } finally {
    rmSync(workDir, { recursive: true, force: true });
    await store.close();
  }
}

function findingJson(f: Finding): Record<string, unknown> {
  const a = f.actor;
  const actor = a && {
    address: a.address.key,
    state: a.state,
    headSeq: a.headSeq,
    generation: a.generation,
    alarmAt: a.alarmAt,
    alarmIndexed: a.indexedRaw,
    error: a.error,
  };
  return f.type === 'actor'
    ? { type: 'actor', kind: f.kind, actor, expectedKey: f.expectedKey, repairedKey: f.repairedKey }
    : { type: 'entry', kind: f.kind, key: f.key, actor, served: f.served };
}

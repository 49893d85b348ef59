/**
 * `keepwork actor inspect ADDRESS [--json]`: one actor as the bucket shows it — its chain's head
 * (seq, writer, generation), its hold and the holder's lease, the committed alarm, `alarm_indexed`,
 * failures, and every index entry present for it with what each one is (index-findings.ts).
 * Reads only: the head is restored into a temp file (committed-state.ts).
 *
 * Finding the entries walks the tenant's index page by page (progress on stderr); an actor's
 * entries can be at any due time, and the index is ordered by due time first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SystemClock } from '../core/clock.js';
import { parseAddress, type ActorAddress } from '../core/address.js';
import { isLive } from '../leases/decisions.js';
import { decodeHold, decodeNode, holdKey, nodeKey, type HoldRecord } from '../leases/records.js';
import { parseEntryKey, tenantPrefix } from '../alarms/keys.js';
import { listAll } from '../store/keys.js';
import { openExistingBucket } from './open-bucket.js';
import type { ObjectStore } from '../store/types.js';
import { readCommitted, type CommittedActor } from '../ops/committed-state.js';
import { resolveOptions } from '../core/config.js';
import { EXPLAIN, actorFinding, entryFinding, type ActorKind, type EntryKind } from '../ops/index-findings.js';
import { Progress } from './progress.js';

export interface Inspection {
  committed: CommittedActor;
  hold: (HoldRecord & { holderStatus: string }) | null;
  entries: { key: string; kind: EntryKind; dueMs: number; generation: number | null }[];
  verdict: ActorKind | 'noAlarm';
}

export async function inspectActor(
  store: ObjectStore,
  a: ActorAddress,
  workDir: string,
  nowMs: number,
  graceMs: number,
  progress?: Progress,
): Promise<Inspection> {
  const committed = await readCommitted(store, a, workDir);
  const hold = await readHold(store, a, nowMs, graceMs);
  const entries: Inspection['entries'] = [];
  let seen = 0;
  for await (const key of listAll(store, { prefix: tenantPrefix(a.tenant) })) {
    progress?.update(`scanned ${++seen} index entries of tenant ${a.tenant}`);
    const e = parseEntryKey(key);
    if (!e || e.address.className !== a.className || e.address.name !== a.name) continue;
    entries.push({ key, kind: entryFinding(e, committed), dueMs: e.dueMs, generation: e.tag?.generation ?? null });
    if (entries.length >= 1000) break; // bounded: far more than the index rules' leftovers ever add up to
  }
  progress?.done();
  const namedExists = entries.some((e) => e.kind === 'named');
  const atAlarm = entries.filter((e) => e.dueMs === committed.alarmAt && e.kind !== 'named').length;
  const verdict = committed.alarmAt === null && committed.state !== 'corrupt' ? 'noAlarm' : actorFinding(committed, namedExists, atAlarm);
  return { committed, hold, entries, verdict };
}

async function readHold(store: ObjectStore, a: ActorAddress, nowMs: number, graceMs: number): Promise<Inspection['hold']> {
  const obj = await store.get(holdKey(a));
  if (!obj) return null;
  const h = decodeHold(obj.body);
  const node = await store.get(nodeKey(h.nodeId));
  let holderStatus = 'no node record';
  if (node) {
    const r = decodeNode(node.body);
    const status = r.state !== 'live' ? r.state : isLive(r, nowMs, r.graceMs ?? graceMs) ? 'live' : 'expired';
    holderStatus = r.epoch === h.epoch ? status : `${status}, now at epoch ${r.epoch}`;
  }
  return { ...h, holderStatus };
}

const iso = (ms: number) => new Date(ms).toISOString();

function inspectionLines(i: Inspection, nowMs: number): string[] {
  const c = i.committed;
  const rel = (ms: number) => (ms >= nowMs ? `in ${((ms - nowMs) / 1000).toFixed(1)}s` : `${((nowMs - ms) / 1000).toFixed(1)}s ago`);
  const lines = [`actor          ${c.address.key}`];
  if (c.state === 'empty') lines.push('chain          none in this bucket');
  else if (c.state === 'corrupt') lines.push(`chain          cannot be restored: ${c.error}`);
  else
    lines.push(
      `chain          head link ${c.headSeq}${c.state === 'deleted' ? ' (tombstone: deleted)' : ''}, generation ${c.generation}, written by ${c.writer!.nodeId} epoch ${c.writer!.epoch} at ${iso(c.writer!.atMs)}`,
    );
  lines.push(
    i.hold
      ? `hold           ${i.hold.state} by ${i.hold.nodeId} epoch ${i.hold.epoch}, generation ${i.hold.generation} (holder: ${i.hold.holderStatus})`
      : 'hold           none',
  );
  lines.push(
    `alarm          ${c.alarmAt === null ? 'none' : `${iso(c.alarmAt)} (${rel(c.alarmAt)})`}${c.alarmFailures ? `, ${c.alarmFailures} failures so far` : ''}`,
  );
  lines.push(`alarm_indexed  ${JSON.stringify(c.indexedRaw ?? '')}${c.indexed === undefined ? ' (unreadable)' : ''}`);
  if (c.ownerFence) lines.push(`owner_fence    ${c.ownerFence}`);
  lines.push(`index entries  ${i.entries.length}`);
  for (const e of i.entries) lines.push(`  ${e.kind.padEnd(15)} ${e.key}  due ${rel(e.dueMs)}`);
  lines.push(`verdict        ${i.verdict}: ${i.verdict === 'noAlarm' ? 'no committed alarm' : EXPLAIN[i.verdict]}`);
  return lines;
}

export async function inspectCommand(address: string, o: { bucket: string; json?: boolean }): Promise<void> {
  const a = parseAddress(address);
  const config = resolveOptions();
  const clock = new SystemClock();
  const store = openExistingBucket(o.bucket, { config, clock });
  const workDir = mkdtempSync(join(tmpdir(), 'keepwork-inspect-'));
  try {
    const now = clock.now();
    const i = await inspectActor(store, a, workDir, now, config.graceMs, new Progress());
    if (o.json) console.log(JSON.stringify({ ...i, committed: { ...i.committed, address: a.key } }, null, 2));
    else for (const line of inspectionLines(i, now)) console.log(line);
  } finally {
    rmSync(workDir, { recursive: true, force: true });
    await store.close();
  }
}

/** The status page's health line (status-health.ts): healthy, or each problem and where. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeliveryRecord, StatusSample } from '../../src/main/status-feed.js';
import { health, recentFailures, selfProblems, type HealthInput, type TenantRow } from '../../src/http/status-health.js';

const NOW = 10_000_000;
const MARGIN = 15_000;

const node = (nodeId: string, status: string, o: { self?: boolean; renewedMsAgo?: number } = {}) => ({
  nodeId,
  epoch: 1,
  status,
  renewedMsAgo: o.renewedMsAgo ?? 2_000,
  self: o.self ?? false,
});
const tenant = (name: string, lagMs: number, overdue = lagMs > 0 ? 3 : 0): TenantRow => ({
  tenant: name,
  entries: 10,
  due: overdue,
  overdue,
  oldestDueMs: NOW - lagMs,
  lagMs,
  sweptLagMs: null,
  truncated: false,
});
const sample = (agoMs: number, failed: number): StatusSample => ({
  atMs: NOW - agoMs,
  backlog: 0,
  lagSeconds: 0,
  held: 0,
  timer: 0,
  delivered: 0,
  failed,
  ran: 0,
  stale: 0,
  kept: 0,
});
const failure = (agoMs: number, error: string): DeliveryRecord => ({
  atMs: NOW - agoMs,
  actor: 't/C/a',
  dueMs: NOW - agoMs,
  outcome: 'failed',
  lateMs: 0,
  error,
});

function input(o: Partial<HealthInput>): HealthInput {
  return {
    nowMs: NOW,
    marginMs: MARGIN,
    selfFenced: false,
    nodes: [node('n1', 'live', { self: true }), node('n2', 'live')],
    tenants: [tenant('demo', 0)],
    samples: [],
    failures: [],
    filesExhausted: null,
    actorFilesHeld: null,
    ...o,
  };
}

describe('status health', () => {
  it('says this node is out of file descriptors for a minute after an event failed for want of them', () => {
    const exhausted = { atMs: NOW - 5_000, message: 'open actor database x: no file descriptor left' };
    const h = health(input({ filesExhausted: exhausted }));
    assert.equal(h.ok, false);
    assert.deepEqual(
      h.problems.map((p) => p.kind),
      ['files-exhausted'],
    );
    assert.match(h.summary, /out of file descriptors 5\.0 s ago/);
    assert.equal(selfProblems({ nowMs: NOW, filesExhausted: exhausted, actorFilesHeld: null }).length, 1);
    assert.deepEqual(selfProblems({ nowMs: NOW + 60_000, filesExhausted: exhausted, actorFilesHeld: null }), []);
    assert.equal(health(input({ filesExhausted: { ...exhausted, atMs: NOW - 60_000 } })).ok, true);
  });

  it('says actors’ files are held by a stuck worker thread for a minute after an event met one', () => {
    const held = { atMs: NOW - 2_000, message: 'open actor database x: the file is held by a worker thread …' };
    const h = health(input({ actorFilesHeld: held }));
    assert.equal(h.ok, false);
    assert.deepEqual(
      h.problems.map((p) => p.kind),
      ['actor-files-held'],
    );
    assert.match(h.summary, /held by a stuck worker thread 2\.0 s ago: those actors cannot be opened until the node restarts/);
    assert.deepEqual(
      selfProblems({ nowMs: NOW, filesExhausted: null, actorFilesHeld: held }).map((p) => p.kind),
      ['actor-files-held'],
    );
    assert.deepEqual(selfProblems({ nowMs: NOW + 60_000, filesExhausted: null, actorFilesHeld: held }), []);
  });

  it('says healthy with the live nodes and the largest lag when nothing is wrong', () => {
    const h = health(input({ nodes: [node('n1', 'live', { self: true }), node('n2', 'live'), node('n3', 'released')] }));
    assert.deepEqual(h, {
      ok: true,
      summary: 'healthy: 2 nodes live, index lag 0.0 s, no failed deliveries in the last minute',
      problems: [],
    });
  });

  it('names each fenced and expired node', () => {
    const h = health(
      input({ nodes: [node('n1', 'live', { self: true }), node('n2', 'fenced'), node('n3', 'expired', { renewedMsAgo: 17_400 })] }),
    );
    assert.equal(h.ok, false);
    assert.deepEqual(
      h.problems.map((p) => [p.kind, p.where, p.what]),
      [
        ['node-fenced', 'n2', 'node n2 (epoch 1) is fenced: down or cut off'],
        ['node-expired', 'n3', 'node n3 not renewed for 17.4 s'],
      ],
    );
    assert.equal(h.summary, '2 problems: node n2 (epoch 1) is fenced: down or cut off · node n3 not renewed for 17.4 s');
  });

  it('says this node is fenced once, not also as a fenced node record', () => {
    const h = health(input({ selfFenced: true, nodes: [node('n1', 'fenced', { self: true })] }));
    assert.deepEqual(
      h.problems.map((p) => [p.kind, p.where]),
      [['self-fenced', 'this node']],
    );
  });

  it('names each tenant whose index lag is over the margin, from the bucket (not the sweep gauge)', () => {
    const stale = { ...tenant('quiet', 0), sweptLagMs: 40_000 }; // a sweep's old value: the bucket says nothing is overdue
    const h = health(input({ tenants: [tenant('demo', 15_000), tenant('billing', 31_200, 7), stale] }));
    assert.deepEqual(
      h.problems.map((p) => [p.kind, p.where, p.what]),
      [['index-lag', 'billing', 'tenant billing: index lag 31.2 s, over the margin (15.0 s); 7 overdue']],
    );
  });

  it('counts failed deliveries of the last minute, sampled or not yet, and quotes the latest', () => {
    const samples = [sample(70_000, 5), sample(30_000, 2), sample(2_000, 1)];
    const failures = [failure(500, 'boom (3)'), failure(1_000, 'boom (2)'), failure(2_500, 'boom (1)')]; // newest first
    assert.equal(recentFailures(samples, failures, NOW), 2 + 1 + 2);
    const h = health(input({ samples, failures }));
    assert.deepEqual(
      h.problems.map((p) => [p.kind, p.where, p.what]),
      [['deliveries-failing', 'this node', '5 deliveries failed on this node in the last minute; latest: t/C/a: boom (3)']],
    );
    assert.equal(health(input({ samples: [sample(61_000, 5)] })).ok, true);
  });
});

/**
 * A handler stuck in a query that never ends (test/fixtures/runaway-node.ts, in a child process,
 * which is the only way to end the stuck thread): the worker is restarted at the hard limit; the
 * actors whose files the old thread holds (EXCLUSIVE locking mode, src/workers/actor-db.ts) are
 * refused at once with OVERLOADED resource actorFile (not HANDLER_FAILED after a 5 s wait on the
 * lock), a new actor is served, and GET /healthz answers 503 naming actor-files-held. No call is
 * served before the old thread has been waited for (RETIRE_WAIT_MS, src/main/worker-group.ts):
 * the new thread's tasks wait for it as the lost ones do.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const FIXTURE = new URL('../fixtures/runaway-node.ts', import.meta.url).pathname;

/** The fixture's JSON line (it then kills itself); the child is killed if it has not printed one in `ms`. */
function runFixture(dir: string, ms: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`runaway-node printed nothing in ${ms} ms: ${err}`));
    }, ms);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop() ?? '';
      if (signal !== 'SIGKILL' || !line.startsWith('{')) return reject(new Error(`runaway-node exited ${code ?? signal}: ${err}${out}`));
      resolve(JSON.parse(line) as Record<string, unknown>);
    });
  });
}

describe('a runaway query', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kw-runaway-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('its worker restarts; the actors its old thread holds are refused as held, others served, health says so', async () => {
    const r = await runFixture(dir, 120_000);
    assert.deepEqual(r.stuck, { code: 'OUTCOME_UNKNOWN' });
    assert.deepEqual(r.b, { code: 'OVERLOADED', resource: 'actorFile' }, 'held by the old thread');
    assert.deepEqual(r.fresh, { ok: ['fresh'] });
    assert.deepEqual(r.healthz, { status: 503, kinds: ['actor-files-held'] });
    assert.ok((r.probes as number) >= 8, `probes sent while it was stuck: ${String(r.probes)}`);
    // Unwaited, the probes sent after the restart are served by the new thread within a moment,
    // up to RETIRE_WAIT_MS (5 s) before the stuck call's answer; waited, with it.
    assert.ok((r.probeLeadMs as number) < 2_000, `a probe was answered ${String(r.probeLeadMs)} ms before the stuck call`);
  });
});

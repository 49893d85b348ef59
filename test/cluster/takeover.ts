/**
 * The kill -9 scenario both cluster suites run (folder bucket and S3): durable increments of one
 * actor through several nodes until enough are acknowledged, kill -9 of its holder, then wait for
 * a survivor to answer for it. The callers assert what must hold of the result.
 */
import assert from 'node:assert/strict';
import { call, type CallResult } from '../../support/cluster/calls.js';
import { FAST } from '../../support/cluster/cluster.js';
import type { ClusterNode } from '../../support/cluster/node.js';
import { waitFor } from '../helpers/wait.js';

/** How long a takeover may take under FAST: lease + grace, plus generous slack for a loaded 2-core machine. */
export const TAKEOVER_BOUND_MS = FAST.leasePeriodMs! + FAST.graceMs! + 12_000;

export const describeCall = (r: CallResult) => `${r.status} ${r.ok ? JSON.stringify(r.result) : `${r.error}: ${r.message}`}`;

export interface KillUnderLoad {
  /** Every acknowledged value (the first call's 1 included). */
  acked: number[];
  lastAck: number;
  killedAt: number;
}

/**
 * One loop of durable `slowIncrement` calls through each of `through` until `ackedMin` are
 * acknowledged and `beforeKill` has run, then kill -9 of `holder`. Every value is acknowledged
 * once at most (asserted).
 */
export async function killUnderDurableLoad(
  holder: ClusterNode,
  through: readonly ClusterNode[],
  actor: string,
  ackedMin: number,
  boundMs: number,
  beforeKill: () => Promise<void>,
): Promise<KillUnderLoad> {
  const acked: number[] = [1];
  let stop = false;
  const loop = async (url: string) => {
    while (!stop) {
      const r = await call(url, actor, 'slowIncrement', [1], { durable: true, timeoutMs: 5_000 });
      if (r.ok) acked.push(r.result as number);
      else if (!stop) throw new Error(`a durable call before the kill failed: ${describeCall(r)}`);
    }
  };
  const loops = through.map((n) => loop(n.url));
  await waitFor(`${ackedMin} acknowledged durable calls`, boundMs, () => (acked.length >= ackedMin ? true : undefined), 10);
  await beforeKill();
  stop = true;
  holder.kill('SIGKILL');
  const killedAt = Date.now();
  await Promise.all(loops);
  await holder.exited;
  assert.equal(new Set(acked).size, acked.length, `no value acknowledged twice: ${acked.join(',')}`);
  return { acked, lastAck: Math.max(...acked), killedAt };
}

/** The actor's value read through `survivor`, once a call there succeeds (after the takeover). */
export function valueAfterTakeover(survivor: ClusterNode, actor: string, boundMs: number, callTimeoutMs: number): Promise<number> {
  return waitFor(
    'a call through a survivor to succeed after the takeover',
    boundMs,
    async () => {
      const r = await call(survivor.url, actor, 'value', [], { timeoutMs: callTimeoutMs });
      return r.ok ? (r.result as number) : undefined;
    },
    100,
  );
}

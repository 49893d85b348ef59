/**
 * The fleet model against real runs of bench/drain on this machine (`npm run bench -- fleet
 * --calibrate`): like with like. Each real run is read back from its result file, and the model
 * is given what that run had —
 *
 *   nodes      its M survivors, all on one machine of this machine's cores (they were processes
 *              of one host, sharing its cores: `nodesPerMachine` = M)
 *   CPU        the CPU its survivors spent per alarm while they drained (all threads, from the
 *              moment the backlog became readable to the last alarm, off the run's CPU curve),
 *              as every delivery's CPU
 *   bucket     every request its fixed latency, no request limits (`--store latency`)
 *
 * — and the two drain times (T + margin → the last alarm ran) are compared. A run missing from
 * bench/results is reported as such, not modelled.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../../../support/repo.js';
import { round } from '../../lib.js';
import type { DrainResults } from '../drain/rows.js';
import { MARGIN_MS } from '../drain/scenario.js';

/** A real run the model is checked against: its result file, and what the file does not record. */
export interface RealRun {
  /** bench/results/<out>.json */
  out: string;
  /** The `--latency-ms` it ran with. */
  latencyMs: number;
  /** The command that wrote it. */
  command: string;
}

export const REAL_RUNS: readonly RealRun[] = [
  {
    out: 'drain-latency',
    latencyMs: 20,
    command: 'npm run bench -- drain --k 10000 --m 1 --store latency --latency-ms 20 --mode adaptive --no-peer --out drain-latency',
  },
  {
    out: 'drain-latency-30-m3',
    latencyMs: 30,
    command: 'npm run bench -- drain --k 10000 --m 3 --store latency --latency-ms 30 --mode adaptive --no-peer --out drain-latency-30-m3',
  },
];

/** What the model takes from one real run, and the figure it is compared with. */
export interface RealInputs {
  run: RealRun;
  /** When the file was written. */
  at: string;
  nodes: number;
  alarms: number;
  /** CPU ms per alarm, all survivors' threads, while the backlog drained. */
  cpuPerAlarmMs: number;
  /** T + margin → the last alarm ran, s. */
  drainS: number;
}

/** The real run's inputs, or undefined when its result file is not there (or has no CPU curve). */
export function realInputs(run: RealRun): RealInputs | undefined {
  const path = join(REPO, 'bench/results', `${run.out}.json`);
  if (!existsSync(path)) return undefined;
  const file = JSON.parse(readFileSync(path, 'utf8')) as DrainResults & { at: string };
  const row = file.rows[0];
  if (!row?.cpuCurve) return undefined;
  const readableS = MARGIN_MS / 1000;
  const lastS = row.lastFiredMs / 1000;
  const cpuS = cpuAt(row.cpuCurve, lastS) - cpuAt(row.cpuCurve, readableS);
  return {
    run,
    at: file.at,
    nodes: row.M,
    alarms: row.K,
    cpuPerAlarmMs: round((cpuS * 1000) / row.K, 2),
    drainS: round(lastS - readableS, 1),
  };
}

/** The survivors' CPU (s) at `tS` after T, linear between the run's samples ([s after T, CPU s]). */
export function cpuAt(curve: readonly (readonly [number, number])[], tS: number): number {
  const i = curve.findIndex(([t]) => t >= tS);
  if (i < 0) return curve.at(-1)![1];
  if (i === 0) return curve[0]![1];
  const [t0, c0] = curve[i - 1]!;
  const [t1, c1] = curve[i]!;
  return c0 + ((c1 - c0) * (tS - t0)) / (t1 - t0);
}

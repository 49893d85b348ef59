/**
 * bench/drain's result files: bench/results/<out>.json (the rows, the BullMQ peer's, the modes and
 * node settings), <out>.md (report.ts's tables) and drain-<store>-<K>.svg (alarms drained over
 * time, keepwork's configurations and BullMQ on one chart), and reading the JSON back.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../../../support/repo.js';
import { quick, round, writeResult } from '../../lib.js';
import type { PeerResult } from '../../peer-bullmq.js';
import { lineChart } from '../svg-chart.js';
import type { DrainOptions } from './options.js';
import { drainMarkdown } from './report.js';
import type { DrainResults, DrainRow } from './rows.js';
import { MARGIN_MS, MODES } from './scenario.js';

function charts(rows: DrainRow[], peers: PeerResult[]): string[] {
  const files: string[] = [];
  for (const store of new Set(rows.map((r) => r.store))) {
    for (const k of new Set(rows.filter((r) => r.store === store).map((r) => r.K))) {
      const mine = rows.filter((r) => r.store === store && r.K === k);
      const series = [
        ...mine.map((r) => ({
          label: `keepwork ${r.mode}, M=${r.M}`,
          points: r.curve.map(([t, n]): [number, number] => [Math.max(0, round(t - MARGIN_MS / 1000, 2)), n]),
        })),
        ...peers.filter((p) => p.K === k).map((p) => ({ label: `BullMQ, ${p.M} workers`, points: p.curve })),
      ];
      const svg = lineChart({
        title: `Alarms drained after they became readable — ${store} store, K=${k}`,
        xLabel: 'seconds since readable (keepwork: T + lease + grace; BullMQ: workers start)',
        yLabel: 'alarms / jobs done',
        series,
      });
      const path = join(REPO, 'bench/results', `drain-${store}-${k}.svg`);
      writeFileSync(path, svg);
      files.push(path);
    }
  }
  return files;
}

/** Writes the JSON, the markdown and the charts of what has run so far; their paths in the repository. */
export function save(o: DrainOptions, rows: DrainRow[], peers: PeerResult[], startedAt: number): string[] {
  const svgs = charts(rows, peers);
  const json = writeResult(o.out, { modes: MODES, nodeSettings: o.nodeSet, durationMs: Date.now() - startedAt, rows, peers });
  writeFileSync(
    join(REPO, `bench/results/${o.out}.md`),
    drainMarkdown(rows, peers, { quick, durationMs: Date.now() - startedAt, argv: process.argv.slice(2) }),
  );
  return [json, ...svgs].map((s) => s.slice(REPO.length));
}

/** The rows and peers of bench/results/<out>.json. */
export function readResults(o: DrainOptions): DrainResults {
  return JSON.parse(readFileSync(join(REPO, `bench/results/${o.out}.json`), 'utf8')) as DrainResults;
}

/**
 * What `keepwork bench` writes: the report as JSON (every run's measures, the sweep and its
 * recommendation) and as one self-contained HTML page (no script, no external file) with inline
 * SVG charts, each with a title and axis titles that name their unit:
 *
 *   rate over time     x: seconds since the alarms were due (s)   y: alarms per second (alarms/s)
 *   lateness           x: lateness (ms)                            y: alarms
 *   sweep              x: the swept tunable's value               y: the metric with its unit
 *
 * (for `bench calls`: calls per second over seconds since the count began, latency in ms).
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { CallsResult } from './calls.js';
import type { DrainResult } from './drain.js';
import type { Recommendation, SweepPoint } from './stats.js';
import { barChart, escapeXml, lineChart } from './svg-chart.js';

export interface SweepReport {
  name: string;
  /** The metric compared, its unit, and which way is better. */
  metric: string;
  unit: string;
  better: 'higher' | 'lower';
  points: (SweepPoint & { mean: number })[];
  recommendation: Recommendation | null;
}

export type BenchRun = ({ kind: 'drain' } & DrainResult) | ({ kind: 'calls' } & CallsResult);

export interface BenchReport {
  kind: 'drain' | 'calls';
  version: string;
  startedAt: string;
  finishedAt: string;
  /** The bucket URL the nodes ran on (with --prefix applied). */
  bucket: string;
  /** The running nodes measured (`--targets`: URL and node id), or null: nodes the bench started. */
  targets: string[] | null;
  /** False when it was stopped (Ctrl-C, an error) before every planned run ended. */
  complete: boolean;
  /** Why it stopped early, when it did. */
  stopped: string | null;
  runs: BenchRun[];
  sweep: SweepReport | null;
}

/** Writes `<dir>/<stem>.json` and `<dir>/<stem>.html`; returns both absolute paths. */
export function writeReport(dir: string, stem: string, r: BenchReport): { json: string; html: string } {
  const json = resolve(dir, `${stem}.json`);
  const html = resolve(dir, `${stem}.html`);
  writeFileSync(json, JSON.stringify(r, null, 2) + '\n');
  writeFileSync(html, reportHtml(r));
  return { json, html };
}

const e = (v: unknown) => escapeXml(String(v));

export function reportHtml(r: BenchReport): string {
  const title = `keepwork bench ${r.kind}`;
  const parts: string[] = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${e(title)} — ${e(r.startedAt)}</title>`,
    '<style>body{font-family:sans-serif;max-width:900px;margin:2em auto;padding:0 1em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}.rec{background:#eef6ee;padding:.6em 1em;border-left:4px solid #2ca02c}figure{margin:1.5em 0}</style>',
    '</head><body>',
    `<h1>${e(title)}</h1>`,
    `<p>keepwork ${e(r.version)}, bucket <code>${e(r.bucket)}</code>, ${r.targets ? `running nodes ${r.targets.map((t) => `<code>${e(t)}</code>`).join(', ')}` : 'nodes started by the bench'}, ${e(r.startedAt)} → ${e(r.finishedAt)}${r.complete ? '' : ` — <strong>incomplete</strong>: ${e(r.stopped ?? 'stopped')}`}</p>`,
  ];
  if (r.sweep) parts.push(...sweepSection(r.sweep));
  parts.push('<h2>Runs</h2>', runsTable(r.runs));
  parts.push(...(r.kind === 'drain' ? drainCharts(r.runs) : callsCharts(r.runs)));
  parts.push('</body></html>');
  return parts.join('\n') + '\n';
}

function sweepSection(s: SweepReport): string[] {
  const rec = s.recommendation
    ? `<p class="rec" id="recommendation">Recommendation: <strong>${e(s.name)}=${e(s.recommendation.value)}</strong>. ${e(s.recommendation.why)}.</p>`
    : '<p class="rec" id="recommendation">No recommendation: no value was measured.</p>';
  const chart = lineChart({
    title: `${s.metric} against ${s.name}`,
    xLabel: `${s.name} (value set with --set)`,
    yLabel: `${s.metric} (${s.unit})`,
    markers: true,
    series: [
      {
        label: `mean of the runs (${s.unit})`,
        points: s.points.filter((p) => Number.isFinite(p.mean)).map((p) => [p.value, p.mean] as const),
      },
    ],
  });
  return ['<h2>Sweep</h2>', rec, `<figure id="chart-sweep">${chart}</figure>`];
}

function runsTable(runs: BenchRun[]): string {
  const rows = runs.map((r) =>
    r.kind === 'drain'
      ? [
          r.label,
          r.complete ? 'yes' : 'no',
          `${r.delivered}/${r.alarms}`,
          r.ratePerSec,
          r.drainSeconds,
          r.latenessMs?.p50 ?? '-',
          r.latenessMs?.p99 ?? '-',
          meanCpu(r),
          r.requests.perUnit,
          r.requests.usdPerMillion,
        ]
      : [
          r.label,
          r.complete ? 'yes' : 'no',
          r.calls,
          r.callsPerSec,
          r.latencyMs?.p50 ?? '-',
          r.latencyMs?.p99 ?? '-',
          r.cpuMsPerCall,
          r.requests.perUnit,
          r.requests.usdPerMillion,
        ],
  );
  const head =
    runs[0]?.kind === 'calls'
      ? [
          'run',
          'complete',
          'calls',
          'calls/s',
          'p50 latency (ms)',
          'p99 latency (ms)',
          'CPU per call (ms)',
          'bucket requests per call',
          'S3 $ per million calls',
        ]
      : [
          'run',
          'complete',
          'delivered',
          'drain rate (alarms/s)',
          'drain (s after T)',
          'p50 lateness (ms)',
          'p99 lateness (ms)',
          'CPU per alarm (ms)',
          'bucket requests per alarm',
          'S3 $ per million alarms',
        ];
  return `<table id="runs"><tr>${head.map((h) => `<th>${e(h)}</th>`).join('')}</tr>${rows.map((row) => `<tr>${row.map((c) => `<td>${e(c)}</td>`).join('')}</tr>`).join('')}</table>`;
}

/** CPU ms per alarm, every live node together. */
function meanCpu(r: DrainResult): number {
  const d = r.perNode.reduce((n, x) => n + x.delivered, 0);
  const ms = r.perNode.reduce((n, x) => n + (x.delivered > 0 ? x.cpuMsPerAlarm * x.delivered : 0), 0);
  return d > 0 ? Math.round((ms / d) * 1000) / 1000 : NaN;
}

function drainCharts(runs: BenchRun[]): string[] {
  const drains = runs.filter((r): r is { kind: 'drain' } & DrainResult => r.kind === 'drain');
  const rate = lineChart({
    title: 'Drain rate over time',
    xLabel: 'time since the alarms were due (s)',
    yLabel: 'alarms delivered per second (alarms/s)',
    series: drains.map((r, i) => ({ label: `${i + 1}. ${r.label}`, points: r.rateOverTime })),
  });
  const last = drains.findLast((r) => r.latenessHistogramMs.length > 0);
  const lateness = last
    ? barChart({
        title: `Lateness of the alarms (${last.label})`,
        xLabel: 'lateness: firing time − due time (ms)',
        yLabel: 'alarms (count)',
        bars: last.latenessHistogramMs.map((b) => ({ from: b.from, to: b.to, value: b.count })),
      })
    : '<p>No lateness: no alarm was read back.</p>';
  return ['<h2>Charts</h2>', `<figure id="chart-rate">${rate}</figure>`, `<figure id="chart-lateness">${lateness}</figure>`];
}

function callsCharts(runs: BenchRun[]): string[] {
  const calls = runs.filter((r): r is { kind: 'calls' } & CallsResult => r.kind === 'calls');
  const rate = lineChart({
    title: 'Calls answered over time',
    xLabel: 'time since the count began (s)',
    yLabel: 'calls answered per second (calls/s)',
    series: calls.map((r, i) => ({ label: `${i + 1}. ${r.label}`, points: r.rateOverTime })),
  });
  const latency = barChart({
    title: 'Latency percentiles per run',
    xLabel: 'run (in order), p50 then p99 of each',
    yLabel: 'latency (ms)',
    bars: calls.flatMap((r, i) => [
      { from: 2 * i, to: 2 * i + 1, value: r.latencyMs?.p50 ?? 0 },
      { from: 2 * i + 1, to: 2 * i + 2, value: r.latencyMs?.p99 ?? 0 },
    ]),
  });
  return ['<h2>Charts</h2>', `<figure id="chart-rate">${rate}</figure>`, `<figure id="chart-latency">${latency}</figure>`];
}

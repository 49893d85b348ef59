/**
 * A small hand-written SVG line chart (no browser, no dependency): one polyline per series over
 * shared axes with "nice" ticks, and a legend. Used for bench/drain's "alarms drained over time
 * per configuration".
 *
 *   lineChart({ title, xLabel, yLabel, series: [{ label, points: [[x, y], ...] }] }) → '<svg …>'
 */
export interface Series {
  label: string;
  points: readonly (readonly [number, number])[];
}

export interface ChartSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  width?: number;
  height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const M = { left: 70, right: 20, top: 40, bottom: 50 };

export const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Round tick values covering [0, max]: 1, 2 or 5 times a power of ten apart. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * pow).find((s) => s >= raw)!;
  const ticks: number[] = [];
  for (let v = 0; v < max + step * 0.999; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

export function lineChart(spec: ChartSpec): string {
  const width = spec.width ?? 800;
  const height = spec.height ?? 420 + 18 * Math.max(0, spec.series.length - 4);
  const all = spec.series.flatMap((s) => s.points);
  const xt = niceTicks(Math.max(0, ...all.map((p) => p[0])));
  const yt = niceTicks(Math.max(0, ...all.map((p) => p[1])));
  const xMax = xt.at(-1)!;
  const yMax = yt.at(-1)!;
  const pw = width - M.left - M.right;
  const ph = height - M.top - M.bottom;
  const X = (x: number) => (M.left + (x / xMax) * pw).toFixed(1);
  const Y = (y: number) => (M.top + ph - (y / yMax) * ph).toFixed(1);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(spec.title)}</text>`,
  ];
  for (const t of xt)
    out.push(
      `<line x1="${X(t)}" y1="${M.top}" x2="${X(t)}" y2="${M.top + ph}" stroke="#eee"/><text x="${X(t)}" y="${M.top + ph + 16}" text-anchor="middle">${t}</text>`,
    );
  for (const t of yt)
    out.push(
      `<line x1="${M.left}" y1="${Y(t)}" x2="${M.left + pw}" y2="${Y(t)}" stroke="#eee"/><text x="${M.left - 6}" y="${Number(Y(t)) + 4}" text-anchor="end">${t}</text>`,
    );
  out.push(`<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  out.push(`<text x="${M.left + pw / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(spec.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">${escapeXml(spec.yLabel)}</text>`);
  spec.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = s.points.map(([x, y]) => `${X(x)},${Y(y)}`).join(' ');
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts}"/>`);
    // Legend bottom-right: drain curves rise from the bottom left and end at the top right.
    const ly = M.top + ph - 10 - 18 * (spec.series.length - 1 - i);
    const lx = M.left + pw - 300;
    out.push(
      `<line x1="${lx}" y1="${ly - 4}" x2="${lx + 20}" y2="${ly - 4}" stroke="${color}" stroke-width="3"/><text x="${lx + 26}" y="${ly}">${escapeXml(s.label)}</text>`,
    );
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/**
 * Small hand-written SVG charts (no browser, no dependency) for `keepwork bench`'s report and
 * the repository's benches: a line chart (one polyline per series over shared axes with "nice"
 * ticks, and a legend) and a bar chart (a histogram). Each has a title and titled axes.
 *
 *   lineChart({ title, xLabel, yLabel, series: [{ label, points: [[x, y], ...] }] }) → '<svg …>'
 *   barChart({ title, xLabel, yLabel, bars: [{ from, to, value }, ...] })            → '<svg …>'
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
  /** A dot at every point (for a few measured values rather than a curve). */
  markers?: boolean;
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
  const out = frame(
    spec.title,
    spec.xLabel,
    spec.yLabel,
    width,
    height,
    xt.map((t) => [Number(X(t)), t]),
    yt.map((t) => [Number(Y(t)), t]),
  );
  spec.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = s.points.map(([x, y]) => `${X(x)},${Y(y)}`).join(' ');
    out.push(`<polyline class="series" fill="none" stroke="${color}" stroke-width="2" points="${pts}"/>`);
    if (spec.markers) for (const [x, y] of s.points) out.push(`<circle cx="${X(x)}" cy="${Y(y)}" r="3.5" fill="${color}"/>`);
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

export interface Bar {
  /** The bar's span on the x axis. */
  from: number;
  to: number;
  value: number;
}

export interface BarSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  bars: readonly Bar[];
  width?: number;
  height?: number;
}

/** A histogram: one bar per bin over numbered axes (x from the first bin's start to the last's end). */
export function barChart(spec: BarSpec): string {
  const width = spec.width ?? 800;
  const height = spec.height ?? 360;
  const x0 = Math.min(0, ...spec.bars.map((b) => b.from));
  const xt = niceTicks(Math.max(0, ...spec.bars.map((b) => b.to)) - x0).map((t) => t + x0);
  const yt = niceTicks(Math.max(0, ...spec.bars.map((b) => b.value)));
  const xMax = xt.at(-1)!;
  const yMax = yt.at(-1)!;
  const pw = width - M.left - M.right;
  const ph = height - M.top - M.bottom;
  const X = (x: number) => M.left + ((x - x0) / (xMax - x0 || 1)) * pw;
  const Y = (y: number) => M.top + ph - (y / yMax) * ph;
  const out = frame(
    spec.title,
    spec.xLabel,
    spec.yLabel,
    width,
    height,
    xt.map((t) => [X(t), t]),
    yt.map((t) => [Y(t), t]),
  );
  for (const b of spec.bars) {
    const w = Math.max(1, X(b.to) - X(b.from) - 1);
    out.push(
      `<rect class="bar" x="${X(b.from).toFixed(1)}" y="${Y(b.value).toFixed(1)}" width="${w.toFixed(1)}" height="${(M.top + ph - Y(b.value)).toFixed(1)}" fill="${COLORS[0]}"><title>${b.from}–${b.to}: ${b.value}</title></rect>`,
    );
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** The svg element, its title, grid lines with numbered ticks, the plot's border and both axis titles. */
function frame(
  title: string,
  xLabel: string,
  yLabel: string,
  width: number,
  height: number,
  xTicks: [number, number][],
  yTicks: [number, number][],
): string[] {
  const pw = width - M.left - M.right;
  const ph = height - M.top - M.bottom;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12" role="img" aria-label="${escapeXml(title)}">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text class="chart-title" x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(title)}</text>`,
  ];
  for (const [x, t] of xTicks)
    out.push(
      `<line x1="${x.toFixed(1)}" y1="${M.top}" x2="${x.toFixed(1)}" y2="${M.top + ph}" stroke="#eee"/><text class="x-tick" x="${x.toFixed(1)}" y="${M.top + ph + 16}" text-anchor="middle">${t}</text>`,
    );
  for (const [y, t] of yTicks)
    out.push(
      `<line x1="${M.left}" y1="${y.toFixed(1)}" x2="${M.left + pw}" y2="${y.toFixed(1)}" stroke="#eee"/><text class="y-tick" x="${M.left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end">${t}</text>`,
    );
  out.push(`<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  out.push(`<text class="x-title" x="${M.left + pw / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(xLabel)}</text>`);
  out.push(
    `<text class="y-title" transform="translate(16 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">${escapeXml(yLabel)}</text>`,
  );
  return out;
}

/**
 * The status page's charts, as browser JavaScript (a string the page inlines; no library). The
 * first part is pure — scales, ticks, series, bins — and test/http/status-page-charts.test.ts runs
 * that same text in Node; `drawChart` turns a model into inline SVG.
 *
 * Every chart has one quantity with its unit on the y axis (a count, or seconds — never both) and
 * "seconds ago" on the x axis, with numbered ticks on both.
 */
export const CHART_JS = String.raw`
const CHART = { W: 460, H: 190, left: 56, right: 12, top: 12, bottom: 40 };

/** The smallest 1, 2 or 5 times 10^k at or above v (v > 0). */
function niceStep(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * p >= v - 1e-9) return m * p;
  return 10 * p;
}

/** Ticks from 0 to a round top at or above max (about four steps); max <= 0 gives 0..1. */
function ticks(max, integer) {
  let step = niceStep(Math.max(max, integer ? 1 : 0.5) / 4);
  if (integer) step = Math.max(1, Math.round(step));
  const top = Math.max(step, Math.ceil(max / step - 1e-9) * step);
  const out = [];
  for (let v = 0; v <= top + step / 2; v += step) out.push(Number(v.toFixed(6)));
  return out;
}

function fmtTick(v) {
  return Math.abs(v) >= 1000 ? (v / 1000).toFixed(v % 1000 === 0 ? 0 : 1) + 'k' : String(Number(v.toFixed(2)));
}

/**
 * A line chart of one field of the samples: points and axes in SVG coordinates. The x axis is
 * seconds before the newest sample; opts.floor raises the y axis top (the margin line of the lag).
 */
function lineModel(samples, field, opts) {
  const o = opts || {};
  const c = CHART, w = c.W - c.left - c.right, h = c.H - c.top - c.bottom;
  const last = samples.slice(-(o.max || 300));
  const newest = last.length ? last[last.length - 1].atMs : 0;
  const span = Math.max(10, last.length ? (newest - last[0].atMs) / 1000 : 0);
  const max = Math.max(o.floor || 0, ...last.map((p) => p[field]));
  const yt = ticks(max, o.integer);
  const top = yt[yt.length - 1];
  const x = (ago) => c.left + w - (ago / span) * w;
  const y = (v) => c.top + h - (v / top) * h;
  const points = last.map((p) => x((newest - p.atMs) / 1000).toFixed(1) + ',' + y(p[field]).toFixed(1)).join(' ');
  const xt = ticks(span, true).filter((s) => s <= span);
  return {
    points,
    count: last.length,
    now: last.length ? last[last.length - 1][field] : 0,
    yTicks: yt.map((v) => ({ v, y: y(v), label: fmtTick(v) })),
    xTicks: xt.map((s) => ({ v: s, x: x(s), label: String(s) })),
    y,
  };
}

/** Deliveries by outcome in bins of binMs, the newest bin ending at the newest sample; at most n bins. */
function outcomeBins(samples, binMs, n) {
  if (!samples.length) return [];
  const newest = samples[samples.length - 1].atMs;
  const bins = [];
  for (let i = n - 1; i >= 0; i--) bins.push({ endAgoS: (i * binMs) / 1000, ran: 0, stale: 0, kept: 0, failed: 0 });
  for (const s of samples) {
    const i = Math.floor((newest - s.atMs) / binMs);
    if (i < 0 || i >= n) continue;
    const b = bins[n - 1 - i];
    b.ran += s.ran || 0; b.stale += s.stale || 0; b.kept += s.kept || 0; b.failed += s.failed || 0;
  }
  return bins;
}

const OUTCOMES = [['ran', '#2f7d32'], ['stale', '#7b8794'], ['kept', '#c7a500'], ['failed', '#b00020']];

/** Stacked bars of outcomeBins: one rect per non-empty outcome, oldest bin left. */
function barsModel(bins, binMs) {
  const c = CHART, w = c.W - c.left - c.right, h = c.H - c.top - c.bottom;
  const max = Math.max(0, ...bins.map((b) => b.ran + b.stale + b.kept + b.failed));
  const yt = ticks(max, true);
  const top = yt[yt.length - 1];
  const span = (bins.length * binMs) / 1000;
  const bw = w / Math.max(1, bins.length);
  const y = (v) => c.top + h - (v / top) * h;
  const rects = [];
  bins.forEach((b, i) => {
    let base = 0;
    for (const [k, color] of OUTCOMES) {
      if (!b[k]) continue;
      rects.push({ outcome: k, color, n: b[k], x: c.left + i * bw + 1, w: Math.max(1, bw - 2), y: y(base + b[k]), h: y(base) - y(base + b[k]) });
      base += b[k];
    }
  });
  const xt = ticks(span, true).filter((s) => s <= span);
  return {
    rects,
    total: bins.reduce((n, b) => n + b.ran + b.stale + b.kept + b.failed, 0),
    yTicks: yt.map((v) => ({ v, y: y(v), label: fmtTick(v) })),
    xTicks: xt.map((s) => ({ v: s, x: c.left + w - (s / span) * w, label: String(s) })),
    y,
  };
}

const SVG_NS = 'http://www.w3.org/2000/svg';
function el(parent, name, attrs, text) {
  const e = document.createElementNS(SVG_NS, name);
  for (const k in attrs) e.setAttribute(k, String(attrs[k]));
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}

/** Draws axes, tick labels and axis titles of a model into svg, then calls series(svg). */
function drawChart(svg, model, yTitle, xTitle, series) {
  const c = CHART;
  svg.replaceChildren();
  svg.setAttribute('viewBox', '0 0 ' + c.W + ' ' + c.H);
  const bottom = c.H - c.bottom, right = c.W - c.right;
  for (const t of model.yTicks) {
    el(svg, 'line', { x1: c.left, x2: right, y1: t.y, y2: t.y, class: 'grid' });
    el(svg, 'text', { x: c.left - 6, y: t.y + 4, 'text-anchor': 'end', class: 'tick y-tick' }, t.label);
  }
  for (const t of model.xTicks) el(svg, 'text', { x: t.x, y: bottom + 15, 'text-anchor': 'middle', class: 'tick x-tick' }, t.label);
  el(svg, 'line', { x1: c.left, x2: c.left, y1: c.top, y2: bottom, class: 'axis' });
  el(svg, 'line', { x1: c.left, x2: right, y1: bottom, y2: bottom, class: 'axis' });
  const yMid = c.top + (bottom - c.top) / 2;
  el(svg, 'text', { x: 14, y: yMid, transform: 'rotate(-90 14 ' + yMid + ')', 'text-anchor': 'middle', class: 'axis-title y-title' }, yTitle);
  el(svg, 'text', { x: c.left + (right - c.left) / 2, y: c.H - 4, 'text-anchor': 'middle', class: 'axis-title x-title' }, xTitle);
  series(svg);
}
`;

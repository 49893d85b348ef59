/**
 * The status page served at GET / by every node: one self-contained HTML document (no CDN, no
 * build step; inline CSS, JS and SVG) that polls GET /v1/status every second and shows
 *
 *   nodes      every node record: status, epoch, address, lease age, holds (from the bucket)
 *   this node  held actors, alarms in its timer, delivery totals
 *   chart      delivery backlog and index lag over the last samples (status-feed.ts ring)
 *   recent     the latest alarm deliveries and failures on this node, newest first
 *
 * Element ids are a contract with test/http/status-page.test.ts.
 */
export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>keepwork status</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; } h2 { font-size: 1.05em; margin: 1.4em 0 .4em; }
  table { border-collapse: collapse; } th, td { padding: .2em .7em; text-align: left; border-bottom: 1px solid #ddd; }
  th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .live { color: #176f2c; } .expired { color: #b35c00; } .fenced, .failed { color: #b00020; } .released { color: #666; }
  .self { font-weight: 600; } #error { color: #b00020; } small { color: #666; }
  svg { border: 1px solid #ddd; background: #fcfcfc; }
  .legend span { margin-right: 1.2em; } .k-backlog { color: #1f5fbf; } .k-lag { color: #c2410c; }
</style>
</head>
<body>
<h1>keepwork <span id="self-node">…</span></h1>
<div><small id="updated">loading…</small> <span id="error"></span></div>

<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>node</th><th>status</th><th>epoch</th><th>address</th><th>renewed</th><th>holds</th></tr></thead><tbody></tbody></table>
<div><small id="holds-note"></small></div>

<h2>This node</h2>
<div id="this-node"></div>

<h2>Backlog over time</h2>
<div class="legend"><span class="k-backlog">■ deliveries queued or running (<span id="backlog-now">0</span>)</span><span class="k-lag">■ index lag, s (<span id="lag-now">0</span>)</span></div>
<svg id="chart" width="720" height="180" viewBox="0 0 720 180" role="img" aria-label="backlog and index lag over time">
  <polyline id="backlog-line" fill="none" stroke="#1f5fbf" stroke-width="2" points=""></polyline>
  <polyline id="lag-line" fill="none" stroke="#c2410c" stroke-width="2" points=""></polyline>
  <text id="chart-max" x="4" y="14" font-size="11" fill="#666"></text>
  <text id="chart-span" x="716" y="174" font-size="11" fill="#666" text-anchor="end"></text>
</svg>

<h2>Recent deliveries and failures (this node)</h2>
<table id="deliveries"><thead><tr><th>at</th><th>actor</th><th>outcome</th><th>due</th><th>late</th><th>detail</th></tr></thead><tbody></tbody></table>

<script>
"use strict";
const $ = (id) => document.getElementById(id);
const time = (ms) => new Date(ms).toISOString().slice(11, 19);
const secs = (ms) => (ms / 1000).toFixed(1) + ' s';
function cell(tr, text, cls) { const td = document.createElement('td'); td.textContent = String(text); if (cls) td.className = cls; tr.appendChild(td); return td; }

function renderNodes(s) {
  const body = $('nodes').tBodies[0];
  body.replaceChildren();
  for (const n of s.nodes) {
    const tr = document.createElement('tr');
    tr.dataset.nodeId = n.nodeId;
    tr.dataset.status = n.status;
    if (n.self) tr.className = 'self';
    cell(tr, n.nodeId + (n.self ? ' (this node)' : ''));
    cell(tr, n.status, n.status);
    cell(tr, n.epoch, 'num');
    cell(tr, n.addr || '-');
    cell(tr, secs(n.renewedMsAgo) + ' ago', 'num');
    cell(tr, n.holds === null ? '…' : n.holds, 'num holds');
    body.appendChild(tr);
  }
  $('holds-note').textContent = 'holds: ' + s.holdsScanned + ' hold records read from the bucket' + (s.holdsTruncated ? ' (truncated: counts are partial)' : '');
}

function renderChart(samples) {
  const W = 720, H = 180, pad = 20;
  const last = samples.slice(-180);
  const max = Math.max(1, ...last.map((p) => Math.max(p.backlog, p.lagSeconds)));
  const x = (i) => (last.length < 2 ? 0 : (i / (last.length - 1)) * (W - 2 * pad)) + pad;
  const y = (v) => H - pad - (v / max) * (H - 2 * pad);
  $('backlog-line').setAttribute('points', last.map((p, i) => x(i).toFixed(1) + ',' + y(p.backlog).toFixed(1)).join(' '));
  $('lag-line').setAttribute('points', last.map((p, i) => x(i).toFixed(1) + ',' + y(p.lagSeconds).toFixed(1)).join(' '));
  $('chart').dataset.points = String(last.length);
  $('chart-max').textContent = 'max ' + max.toFixed(1);
  $('chart-span').textContent = last.length ? 'last ' + Math.round((last[last.length - 1].atMs - last[0].atMs) / 1000) + ' s' : '';
  const now = last[last.length - 1];
  $('backlog-now').textContent = now ? String(now.backlog) : '0';
  $('lag-now').textContent = now ? now.lagSeconds.toFixed(1) : '0';
}

function renderDeliveries(list) {
  const body = $('deliveries').tBodies[0];
  body.replaceChildren();
  for (const d of list.slice(0, 50)) {
    const tr = document.createElement('tr');
    tr.dataset.outcome = d.outcome;
    tr.dataset.actor = d.actor;
    cell(tr, time(d.atMs));
    cell(tr, d.actor);
    cell(tr, d.outcome, d.outcome);
    cell(tr, time(d.dueMs));
    cell(tr, secs(d.lateMs), 'num');
    cell(tr, d.error ? d.error : d.removed ? d.removed + ' stale entries removed' : '');
    body.appendChild(tr);
  }
}

async function poll() {
  try {
    const r = await fetch('/v1/status', { cache: 'no-store' });
    if (!r.ok) throw new Error('GET /v1/status: ' + r.status);
    const s = await r.json();
    $('self-node').textContent = s.node.nodeId + ' (epoch ' + s.node.epoch + ')';
    $('this-node').textContent = 'holds ' + s.node.held + ' actors · ' + s.node.timer + ' alarms in its timer · deliveries: ' +
      s.totals.ran + ' ran, ' + s.totals.stale + ' stale, ' + s.totals.kept + ' kept, ' + s.totals.failed + ' failed';
    renderNodes(s);
    renderChart(s.samples);
    renderDeliveries(s.deliveries);
    $('updated').textContent = 'updated ' + time(s.node.atMs) + ' UTC';
    $('error').textContent = '';
  } catch (e) {
    $('error').textContent = 'cannot reach this node: ' + e.message;
  }
}
poll();
setInterval(poll, 1000);
</script>
</body>
</html>
`;

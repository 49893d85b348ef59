/**
 * The status page's own JavaScript (inlined by status-page.ts after CHART_JS): polls GET
 * /v1/status every second and renders each part. Text goes in through textContent only; a node's
 * address becomes a link only when it is an http(s) URL.
 */
export const PAGE_JS = String.raw`
const $ = (id) => document.getElementById(id);
const time = (ms) => new Date(ms).toISOString().slice(11, 19);
const secs = (ms) => (ms / 1000).toFixed(1) + ' s';
const BIN_MS = 10000, BINS = 30;
function cell(tr, text, cls) { const td = document.createElement('td'); td.textContent = String(text); if (cls) td.className = cls; tr.appendChild(td); return td; }
function rows(id, list, fill) {
  const body = $(id).tBodies[0];
  body.replaceChildren();
  for (const item of list) { const tr = document.createElement('tr'); fill(tr, item); body.appendChild(tr); }
  $(id).dataset.rows = String(list.length);
}

function renderHealth(h) {
  const box = $('health');
  box.className = h.ok ? 'ok' : 'bad';
  box.dataset.ok = String(h.ok);
  $('health-summary').textContent = h.ok ? h.summary : h.problems.length + (h.problems.length === 1 ? ' problem' : ' problems');
  const ul = $('problems');
  ul.replaceChildren();
  for (const p of h.problems) {
    const li = document.createElement('li');
    li.dataset.kind = p.kind;
    li.dataset.where = p.where;
    li.textContent = p.what;
    ul.appendChild(li);
  }
}

function renderNodes(s) {
  const most = Math.max(1, ...s.nodes.map((n) => n.holds || 0));
  rows('nodes', s.nodes, (tr, n) => {
    tr.dataset.nodeId = n.nodeId;
    tr.dataset.status = n.status;
    if (n.self) tr.className = 'self';
    cell(tr, n.nodeId + (n.self ? ' (this node)' : ''));
    cell(tr, n.status, n.status);
    cell(tr, n.epoch, 'num');
    const addr = cell(tr, '', 'addr');
    if (/^https?:\/\/[^\s]+$/.test(n.addr || '')) {
      const a = document.createElement('a');
      a.href = n.addr.replace(/\/$/, '') + '/';
      a.textContent = n.addr;
      addr.appendChild(a);
    } else addr.textContent = n.addr || '-';
    cell(tr, secs(n.renewedMsAgo) + ' ago', 'num');
    const holds = cell(tr, n.holds === null ? '\u2026' : n.holds, 'num holds');
    const bar = cell(tr, '', 'bar');
    if (n.holds) { const b = document.createElement('span'); b.style.width = Math.round((n.holds / most) * 120) + 'px'; bar.appendChild(b); }
    holds.title = 'hold records in the bucket for ' + n.nodeId + ' epoch ' + n.epoch;
  });
  $('holds-note').textContent = 'holds: ' + s.holdsScanned + ' hold records read from the bucket' + (s.holdsTruncated ? ' (truncated: counts are partial)' : '');
}

function renderTenants(s) {
  rows('tenants', s.tenants, (tr, t) => {
    tr.dataset.tenant = t.tenant;
    const late = t.lagMs > s.marginMs;
    if (late) tr.className = 'late';
    cell(tr, t.tenant);
    cell(tr, t.entries + (t.truncated ? '+' : ''), 'num entries');
    cell(tr, t.due + (t.truncated ? '+' : ''), 'num due');
    cell(tr, t.overdue + (t.truncated ? '+' : ''), 'num overdue');
    const ago = t.oldestDueMs === null ? null : s.node.atMs - t.oldestDueMs;
    cell(tr, ago === null ? '-' : time(t.oldestDueMs) + (ago >= 0 ? ' (' + secs(ago) + ' ago)' : ' (in ' + secs(-ago) + ')'), 'oldest');
    cell(tr, secs(t.lagMs), 'num lag');
    cell(tr, t.sweptLagMs === null ? '-' : secs(t.sweptLagMs), 'num swept-lag');
  });
  $('tenants-note').textContent = s.tenants.length === 0 ? 'the alarm index is empty' :
    'listed from the bucket at ' + (s.indexReadAtMs ? time(s.indexReadAtMs) : '-') + ' UTC; overdue = due more than one margin (' + secs(s.marginMs) + ') ago' +
    (s.tenantsTruncated ? '; more tenants than shown' : '');
}

function failureRow(tr, d) {
  tr.dataset.outcome = d.outcome;
  tr.dataset.actor = d.actor;
  cell(tr, time(d.atMs));
  cell(tr, d.actor);
  cell(tr, d.outcome, d.outcome);
  cell(tr, time(d.dueMs));
  cell(tr, secs(d.lateMs), 'num');
  cell(tr, d.error ? (d.code ? d.code + ': ' : '') + d.error : d.removed ? d.removed + ' stale entries removed' : '', 'detail');
}

function renderCharts(s) {
  const backlog = lineModel(s.samples, 'backlog', { integer: true });
  drawChart($('backlog-chart'), backlog, 'deliveries (count)', 'seconds ago', (svg) =>
    el(svg, 'polyline', { id: 'backlog-line', points: backlog.points, class: 'line backlog' }));
  $('backlog-chart').dataset.points = String(backlog.count);
  $('backlog-now').textContent = String(backlog.now);

  const margin = s.marginMs / 1000;
  const lag = lineModel(s.samples, 'lagSeconds', { floor: margin * 1.1 });
  drawChart($('lag-chart'), lag, 'index lag (seconds)', 'seconds ago', (svg) => {
    const c = CHART;
    el(svg, 'line', { x1: c.left, x2: c.W - c.right, y1: lag.y(margin), y2: lag.y(margin), class: 'margin' });
    el(svg, 'text', { x: c.W - c.right - 4, y: lag.y(margin) - 4, 'text-anchor': 'end', class: 'tick margin-label' }, 'margin ' + margin + ' s');
    el(svg, 'polyline', { id: 'lag-line', points: lag.points, class: 'line lag' });
  });
  $('lag-chart').dataset.points = String(lag.count);
  $('lag-now').textContent = lag.now.toFixed(1) + ' s';

  const bins = outcomeBins(s.samples, BIN_MS, BINS);
  const bars = barsModel(bins, BIN_MS);
  drawChart($('outcomes-chart'), bars, 'deliveries per 10 s (count)', 'seconds ago', (svg) => {
    for (const r of bars.rects) el(svg, 'rect', { x: r.x, y: r.y, width: r.w, height: r.h, fill: r.color, 'data-outcome': r.outcome, 'data-n': r.n });
  });
  $('outcomes-chart').dataset.total = String(bars.total);
  $('outcomes-now').textContent = bars.total + ' in ' + (BINS * BIN_MS) / 60000 + ' min';
}

async function poll() {
  try {
    const r = await fetch('/v1/status', { cache: 'no-store' });
    if (!r.ok) throw new Error('GET /v1/status: ' + r.status);
    const s = await r.json();
    $('self-node').textContent = s.node.nodeId + ' (epoch ' + s.node.epoch + ')';
    $('this-node').textContent = 'holds ' + s.node.held + ' actors \u00b7 ' + s.node.timer + ' alarms in its timer \u00b7 deliveries: ' +
      s.totals.ran + ' ran, ' + s.totals.stale + ' stale, ' + s.totals.kept + ' kept, ' + s.totals.failed + ' failed';
    renderHealth(s.health);
    renderCharts(s);
    renderNodes(s);
    renderTenants(s);
    rows('failures', s.failures, failureRow);
    rows('deliveries', s.deliveries.slice(0, 50), failureRow);
    $('updated').textContent = 'updated ' + time(s.node.atMs) + ' UTC';
    $('error').textContent = '';
    document.body.dataset.polled = String(Number(document.body.dataset.polled || 0) + 1);
  } catch (e) {
    $('error').textContent = 'cannot reach this node: ' + e.message;
    $('health').className = 'bad';
    $('health-summary').textContent = 'this node does not answer';
  }
}
poll();
setInterval(poll, 1000);
`;

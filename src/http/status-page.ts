/**
 * The status page served at GET / by every node: one self-contained HTML document (no CDN, no
 * build step, works offline; inline CSS, JS and SVG) that polls GET /v1/status every second and
 * answers "is my cluster healthy, and if not, where?":
 *
 *   health      one line: healthy, or each problem and where (status-health.ts)
 *   charts      backlog (count), index lag (seconds, with the margin), deliveries by outcome per
 *               10 s — one quantity and unit per chart, labelled axes (status-page-charts.ts)
 *   nodes       every node record: status, epoch, address (a link to that node's page), lease
 *               age, holds (from the bucket)
 *   index       each tenant's alarm index: entries, due, overdue, oldest, lag
 *   failures    the last failed deliveries on this node with their errors
 *   recent      the latest alarm deliveries on this node, newest first
 *
 * Element ids are a contract with test/http/status-page.test.ts. The script is status-page-script.ts.
 */
import { CHART_JS } from './status-page-charts.js';
import { PAGE_JS } from './status-page-script.js';

const CSS = `
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1500px; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; } h2 { font-size: 1.05em; margin: 1.4em 0 .4em; }
  h3 { font-size: .95em; margin: 0 0 .2em; font-weight: 600; } h3 span { font-weight: normal; color: #444; }
  table { border-collapse: collapse; } th, td { padding: .2em .7em; text-align: left; border-bottom: 1px solid #ddd; }
  th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .live { color: #176f2c; } .expired { color: #b35c00; } .fenced, .failed { color: #b00020; } .released { color: #666; }
  .self { font-weight: 600; } #error { color: #b00020; } small { color: #666; }
  #health { padding: .6em .9em; border-radius: 4px; margin: .6em 0 0; }
  #health.ok { background: #e7f5ea; border: 1px solid #9ccfa6; } #health.bad { background: #fdecee; border: 1px solid #e59aa5; }
  #health-summary { font-weight: 600; } #problems { margin: .3em 0 0; padding-left: 1.4em; } #problems:empty { display: none; }
  .charts { display: flex; flex-wrap: wrap; gap: 1.2em; } .chart { flex: 0 0 auto; }
  svg { border: 1px solid #ddd; background: #fcfcfc; width: 460px; height: 190px; display: block; }
  svg .grid { stroke: #eee; } svg .axis { stroke: #888; } svg .tick { font-size: 11px; fill: #555; }
  svg .axis-title { font-size: 11px; fill: #333; } svg .line { fill: none; stroke-width: 2; }
  svg .backlog { stroke: #1f5fbf; } svg .lag { stroke: #c2410c; } svg .margin { stroke: #b00020; stroke-dasharray: 4 3; }
  .key span { margin-right: .9em; font-size: .85em; } .key i { display: inline-block; width: .8em; height: .8em; margin-right: .25em; vertical-align: -1px; }
  td.bar span { display: inline-block; height: .7em; background: #1f5fbf; border-radius: 2px; }
  tr.late td { background: #fdecee; } td.detail { max-width: 48em; overflow-wrap: anywhere; }
`;

const BODY = `
<h1>keepwork <span id="self-node">…</span></h1>
<div><small id="updated">loading…</small> <span id="error"></span></div>
<div id="health"><span id="health-summary">loading…</span><ul id="problems"></ul></div>

<h2>Over time (this node)</h2>
<div class="charts">
  <div class="chart"><h3>Delivery backlog <span>— queued or running, now <b id="backlog-now">-</b></span></h3>
    <svg id="backlog-chart" role="img" aria-label="delivery backlog (count) over the last minutes"></svg></div>
  <div class="chart"><h3>Index lag <span>— largest over tenants this node swept, now <b id="lag-now">-</b></span></h3>
    <svg id="lag-chart" role="img" aria-label="index lag (seconds) over the last minutes"></svg></div>
  <div class="chart"><h3>Deliveries by outcome <span>— <b id="outcomes-now">-</b></span></h3>
    <svg id="outcomes-chart" role="img" aria-label="deliveries by outcome per 10 seconds"></svg>
    <div class="key"><span><i style="background:#2f7d32"></i>ran</span><span><i style="background:#7b8794"></i>stale</span><span><i style="background:#c7a500"></i>kept</span><span><i style="background:#b00020"></i>failed</span></div></div>
</div>

<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>node</th><th>status</th><th>epoch</th><th>address</th><th>renewed</th><th>holds</th><th></th></tr></thead><tbody></tbody></table>
<div><small id="holds-note"></small></div>

<h2>This node</h2>
<div id="this-node"></div>

<h2>Alarm index by tenant</h2>
<table id="tenants"><thead><tr><th>tenant</th><th>entries</th><th>due</th><th>overdue</th><th>oldest due (UTC)</th><th>lag</th><th>lag at this node's last sweep</th></tr></thead><tbody></tbody></table>
<div><small id="tenants-note"></small></div>

<h2>Last failures (this node)</h2>
<table id="failures"><thead><tr><th>at</th><th>actor</th><th>outcome</th><th>due</th><th>late</th><th>error</th></tr></thead><tbody></tbody></table>

<h2>Recent deliveries (this node)</h2>
<table id="deliveries"><thead><tr><th>at</th><th>actor</th><th>outcome</th><th>due</th><th>late</th><th>detail</th></tr></thead><tbody></tbody></table>
`;

export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>keepwork status</title>
<style>${CSS}</style>
</head>
<body>
${BODY}
<script>
"use strict";
${CHART_JS}
${PAGE_JS}
</script>
</body>
</html>
`;

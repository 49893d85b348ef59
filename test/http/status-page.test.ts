/**
 * The status page at GET / in headless Chromium (playwright-core driving Debian's chromium, which
 * scripts/chromium.sh installs; KEEPWORK_CHROMIUM overrides the path). Two real nodes share a
 * folder bucket; an alarm that fails once and then runs is set on the first, and a far one in a
 * tenant of its own; the page on that node must say what is wrong and where (the failing
 * delivery), list both nodes as live with links to their pages, count the holds, list the
 * tenant's index, draw three charts with labelled axes, and show the failure with its error; the
 * link to the second node leads to its page, which says healthy. Every check waits for the page
 * to show it (it fills itself by polling). Without a browser the test is skipped with a loud message — except under CI=true,
 * where it fails.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { StatusJson } from '../../src/http/status-view.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const REMINDER = new URL('../../examples/reminder.ts', import.meta.url).href;

function browserPath(): string | undefined {
  const r = spawnSync('bash', ['scripts/chromium.sh', 'path'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

const executablePath = browserPath();
if (!executablePath) {
  const message =
    'NO CHROMIUM: the status page test cannot run; install it with `bash scripts/chromium.sh ensure` (root) or set KEEPWORK_CHROMIUM';
  if (process.env.CI === 'true') throw new Error(message);
  console.error(`\n!!! ${message} — SKIPPING !!!\n`);
}

/** Polls `check` in the page until it shows `what` (the page fills itself by polling every second); a failure quotes the page. */
async function shows<T>(page: Page, what: string, check: () => Promise<T | null | undefined | false>, limitMs = 30_000): Promise<T> {
  try {
    return await waitFor(`the page to show ${what}`, limitMs, check, 250);
  } catch (e) {
    throw new Error(`${(e as Error).message}; body: ${(await page.textContent('body'))?.slice(0, 2000)}`);
  }
}

// At the file's level, so that the folders go after the describe's own `after` has stopped the
// nodes (a node still running when they went wrote its releases back into a new bucket folder).
const temp = tempDirs('kw-status-page-');

describe('status page', { skip: !executablePath && 'no Chromium (see the message above)' }, () => {
  let a: KeepworkNode;
  let b: KeepworkNode;
  let browser: Browser;
  let page: Page;

  before(async () => {
    const root = temp();
    const common = { bucket: join(root, 'bucket'), classes: { Reminder: REMINDER }, port: 0, workerThreads: 1, logger: silentLogger() };
    a = await startNode({ ...common, dataDir: join(root, 'a'), nodeId: 'page-a' });
    b = await startNode({ ...common, dataDir: join(root, 'b'), nodeId: 'page-b' });
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    page = await browser.newPage();
  });

  after(async () => {
    await browser?.close();
    await a?.stop();
    await b?.stop();
  });

  it('answers at a glance: health, labelled charts, linked nodes, holds, the index, the failures', async () => {
    const r = a.actor('demo/Reminder/page-r1');
    await r.callDurable('failTimes', 1);
    await r.callDurable('remind', 300, 'from the status page test');
    // A far alarm in a tenant of its own: its index row has exactly one entry, not yet due.
    const far = await a.actor('page/Reminder/page-far').callDurable<number>('remind', 3_600_000, 'later');
    await page.goto(a.url + '/');

    assert.equal(await page.title(), 'keepwork status');
    // The page's first poll fills it in.
    const self = await shows(page, 'this node', async () => {
      const text = (await page.textContent('#self-node')) ?? '';
      return text !== '…' && text; // "…" until the first poll answers
    });
    assert.match(self, /^page-a \(epoch \d+\)$/);

    // The failure: in the health line (where: this node), in the last failures with its error, in the recent deliveries.
    const problem = await shows(page, 'deliveries failing in the health line', () =>
      page.$('#problems li[data-kind="deliveries-failing"]'),
    );
    assert.equal(await problem.getAttribute('data-where'), 'this node');
    assert.match(
      (await problem.textContent()) ?? '',
      /^\d+ deliveries failed on this node in the last minute; latest: demo\/Reminder\/page-r1: /,
    );
    assert.equal(await page.getAttribute('#health', 'data-ok'), 'false');
    const failure = await shows(page, 'the failure with its error', () =>
      page.$('#failures tbody tr[data-actor="demo/Reminder/page-r1"]:has-text("failing on purpose")'),
    );
    assert.match((await failure.textContent()) ?? '', /failed.*HANDLER_FAILED: failing on purpose \(1 of 1\)/);
    assert.ok(
      await shows(page, 'a failed delivery', () =>
        page.$('#deliveries tbody tr[data-outcome="failed"][data-actor="demo/Reminder/page-r1"]'),
      ),
    );
    assert.ok(
      await shows(page, 'a delivery that ran', () =>
        page.$('#deliveries tbody tr[data-outcome="ran"][data-actor="demo/Reminder/page-r1"]'),
      ),
    );
    assert.equal((await r.call<unknown[]>('history')).length, 1);

    const rows = await shows(page, 'both nodes, live', async () => {
      const live = await page.$$eval('#nodes tbody tr[data-status="live"]', (trs) => trs.map((tr) => tr.getAttribute('data-node-id')));
      return live.length === 2 ? live : undefined;
    });
    assert.deepEqual(rows, ['page-a', 'page-b']);
    // Each address links to that node's own page.
    assert.equal(await page.getAttribute('#nodes tr[data-node-id="page-a"] td.addr a', 'href'), a.url + '/');
    assert.equal(await page.getAttribute('#nodes tr[data-node-id="page-b"] td.addr a', 'href'), b.url + '/');

    const holds = await shows(page, 'the holds of page-a', async () => {
      const text = await page.textContent('#nodes tbody tr[data-node-id="page-a"] td.holds');
      return text === '2' ? text : undefined;
    });
    assert.equal(holds, '2');
    assert.equal(await page.textContent('#nodes tbody tr[data-node-id="page-b"] td.holds'), '0');

    // The index of tenant "page": one entry, not due, no lag; its oldest due time is the far alarm's.
    const tenant = await shows(page, 'the index of tenant page', async () => {
      const cells = await page.$$eval('#tenants tbody tr[data-tenant="page"] td', (tds) => tds.map((td) => td.textContent));
      return cells.length ? cells : undefined;
    });
    assert.deepEqual([tenant[0], tenant[1], tenant[2], tenant[3], tenant[5]], ['page', '1', '0', '0', '0.0 s']);
    assert.match(tenant[4]!, new RegExp(`^${new Date(far).toISOString().slice(11, 19)} \\(in \\d+\\.\\d s\\)$`));

    // Three charts, each one quantity with its unit on a labelled y axis, "seconds ago" on x, numbered ticks.
    const titles = await page.$$eval('svg', (svgs) =>
      svgs.map((s) => [s.id, s.querySelector('.y-title')?.textContent, s.querySelector('.x-title')?.textContent]),
    );
    assert.deepEqual(titles, [
      ['backlog-chart', 'deliveries (count)', 'seconds ago'],
      ['lag-chart', 'index lag (seconds)', 'seconds ago'],
      ['outcomes-chart', 'deliveries per 10 s (count)', 'seconds ago'],
    ]);
    for (const id of ['backlog-chart', 'lag-chart', 'outcomes-chart']) {
      const ticks = await page.$$eval(`#${id} .y-tick`, (ts) => ts.map((t) => Number(t.textContent)));
      assert.ok(ticks.length >= 2 && ticks[0] === 0 && ticks.every((t, i) => i === 0 || t > ticks[i - 1]!), `${id} y ticks: ${ticks}`);
      assert.ok((await page.$$(`#${id} .x-tick`)).length >= 2, `${id} has x ticks`);
    }
    assert.equal(await page.textContent('#lag-chart .margin-label'), 'margin 15 s');
    const points = await shows(page, 'a backlog chart with points', async () => {
      const n = Number(await page.getAttribute('#backlog-chart', 'data-points'));
      return n >= 2 ? n : undefined;
    });
    const line = (await page.getAttribute('#backlog-line', 'points')) ?? '';
    assert.ok(line.trim().split(/\s+/).length === points, `backlog line: ${JSON.stringify(line)}`);
    assert.match((await page.textContent('#lag-now')) ?? '', /^\d+\.\d s$/);
    const bars = await shows(page, 'the ran and failed deliveries in the outcome chart', async () => {
      const drawn = await page.$$eval('#outcomes-chart rect', (rs) =>
        rs.map((r) => `${r.getAttribute('data-outcome')}=${r.getAttribute('data-n')}`),
      );
      return drawn.includes('failed=1') && drawn.some((d) => d.startsWith('ran=')) ? drawn : undefined;
    });
    assert.ok(bars.length >= 2);

    const counts = await shows(page, 'the deliveries counted', async () => {
      const text = (await page.textContent('#this-node')) ?? '';
      return /1 ran/.test(text) ? text : undefined;
    });
    assert.match(counts, /1 ran, \d+ stale, \d+ kept, 1 failed/);

    // The link leads to page-b's own page, where nothing failed: healthy.
    await page.click('#nodes tr[data-node-id="page-b"] td.addr a');
    const healthy = await shows(page, "page-b's health line", async () => {
      const self = (await page.textContent('#self-node')) ?? '';
      const line = (await page.textContent('#health-summary')) ?? '';
      return self.startsWith('page-b') && line.startsWith('healthy') ? line : undefined;
    });
    assert.match(healthy, /^healthy: 2 nodes live, index lag 0\.0 s, no failed deliveries in the last minute$/);
    assert.equal(page.url(), b.url + '/');
  });

  it('serves the JSON behind it, and refuses other methods without changing anything', async () => {
    const s = (await (await fetch(a.url + '/v1/status')).json()) as StatusJson;
    assert.equal(s.node.nodeId, 'page-a');
    assert.equal(s.node.fenced, false);
    assert.deepEqual(
      s.nodes.map((n) => n.nodeId),
      ['page-a', 'page-b'],
    );
    assert.ok(Array.isArray(s.samples));
    assert.equal(s.marginMs, a.config.marginMs);
    assert.deepEqual(
      s.failures.filter((f) => f.code === 'HANDLER_FAILED').map((f) => [f.actor, f.outcome, f.error]),
      [['demo/Reminder/page-r1', 'failed', 'failing on purpose (1 of 1)']],
    );
    assert.ok(s.health.problems.some((p) => p.kind === 'deliveries-failing' && p.where === 'this node'));
    const page = s.tenants.find((t) => t.tenant === 'page');
    assert.deepEqual(page && [page.entries, page.due, page.overdue, page.lagMs, page.truncated], [1, 0, 0, 0, false]);
    const post = await fetch(a.url + '/', { method: 'POST', body: '[]' });
    assert.equal(post.status, 405);
  });
});

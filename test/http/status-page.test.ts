/**
 * The status page at GET / in headless Chromium (playwright-core driving Debian's chromium, which
 * scripts/chromium.sh installs; KEEPWORK_CHROMIUM overrides the path). Two real nodes share a
 * folder bucket; an alarm that fails once and then runs is set on the first; the page on that
 * node must list both nodes as live, count the hold, draw the chart, and show the failure and the
 * delivery. Without a browser the test is skipped with a loud message — except under CI=true,
 * where it fails.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
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

describe('status page', { skip: !executablePath && 'no Chromium (see the message above)' }, () => {
  const temp = tempDirs('kw-status-page-');
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

  it('lists the nodes and the holds, draws the chart, and shows a failure and a delivery', async () => {
    const r = a.actor('demo/Reminder/page-r1');
    await r.callDurable('failTimes', 1);
    await r.callDurable('remind', 300, 'from the status page test');
    await page.goto(a.url + '/');

    assert.equal(await page.title(), 'keepwork status');
    // The page's first poll fills it in.
    const self = await shows(page, 'this node', async () => {
      const text = (await page.textContent('#self-node')) ?? '';
      return text !== '…' && text; // "…" until the first poll answers
    });
    assert.match(self, /^page-a \(epoch \d+\)$/);

    const rows = await shows(page, 'both nodes, live', async () => {
      const live = await page.$$eval('#nodes tbody tr[data-status="live"]', (trs) => trs.map((tr) => tr.getAttribute('data-node-id')));
      return live.length === 2 ? live : undefined;
    });
    assert.deepEqual(rows, ['page-a', 'page-b']);

    const holds = await shows(page, 'the hold of page-a', async () => {
      const text = await page.textContent('#nodes tbody tr[data-node-id="page-a"] td.holds');
      return text === '1' ? text : undefined;
    });
    assert.equal(holds, '1');
    assert.equal(await page.textContent('#nodes tbody tr[data-node-id="page-b"] td.holds'), '0');

    const failed = await shows(page, 'a failed delivery', () =>
      page.$('#deliveries tbody tr[data-outcome="failed"][data-actor="demo/Reminder/page-r1"]'),
    );
    assert.match((await failed.textContent()) ?? '', /failing on purpose/);
    const ran = await shows(page, 'a delivery that ran', () =>
      page.$('#deliveries tbody tr[data-outcome="ran"][data-actor="demo/Reminder/page-r1"]'),
    );
    assert.ok(ran);
    assert.equal((await r.call<unknown[]>('history')).length, 1);

    const points = await shows(page, 'a chart with points', async () => {
      const n = Number(await page.getAttribute('#chart', 'data-points'));
      return n >= 2 ? n : undefined;
    });
    const line = (await page.getAttribute('#backlog-line', 'points')) ?? '';
    assert.ok(line.trim().split(/\s+/).length >= 2 && points >= 2, `backlog line: ${JSON.stringify(line)}`);
    const counts = await shows(page, 'the deliveries counted', async () => {
      const text = (await page.textContent('#this-node')) ?? '';
      return /1 ran/.test(text) ? text : undefined;
    });
    assert.match(counts, /1 ran, \d+ stale, \d+ kept, 1 failed/);
  });

  it('serves the JSON behind it, and refuses other methods without changing anything', async () => {
    const s = (await (await fetch(a.url + '/v1/status')).json()) as {
      node: { nodeId: string };
      nodes: { nodeId: string }[];
      samples: unknown[];
    };
    assert.equal(s.node.nodeId, 'page-a');
    assert.deepEqual(
      s.nodes.map((n) => n.nodeId),
      ['page-a', 'page-b'],
    );
    assert.ok(Array.isArray(s.samples));
    const post = await fetch(a.url + '/', { method: 'POST', body: '[]' });
    assert.equal(post.status, 405);
  });
});

/**
 * Makes docs/status-page.png: the README walkthrough with live data, photographed by headless
 * Chromium (the browser scripts/chromium.sh finds; KEEPWORK_CHROMIUM overrides).
 *
 *   three nodes (`keepwork start`, one process each) share a folder bucket in a temp dir;
 *   20 reminders due in 20 s are set through n1 (n1 holds them), a far one in tenant "billing",
 *   a reminder that fails 4 times and two recurring ones through n2;
 *   n1 is killed (SIGKILL) before its reminders come due; once n2 and n3 have delivered them,
 *   n2's page is photographed (n1 fenced, the failures, the lag bump, the deliveries by outcome).
 *
 *   tsx scripts/status-page-screenshot.ts [--out docs/status-page.png] [--base-port 9131]
 *
 * Takes about a minute. Kills only the processes it started.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const { values } = parseArgs({
  options: { out: { type: 'string', default: 'docs/status-page.png' }, 'base-port': { type: 'string', default: '9131' } },
});
const basePort = Number(values['base-port']);
const root = mkdtempSync(join(tmpdir(), 'kw-screenshot-'));
const nodes = new Map<string, { url: string; child: ChildProcess }>();

const browserPath = spawnSync('bash', ['scripts/chromium.sh', 'path'], { encoding: 'utf8' });
if (browserPath.status !== 0) throw new Error('no Chromium: bash scripts/chromium.sh ensure (root), or set KEEPWORK_CHROMIUM');

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

async function until<T>(what: string, limitMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

function start(id: string, port: number): void {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/cli.ts', 'start', '--data', join(root, id), '--node-id', id, '--port', String(port)].concat([
      '--bucket',
      join(root, 'bucket'),
      '--class',
      'Reminder=examples/reminder.ts',
    ]),
    { stdio: 'ignore' },
  );
  nodes.set(id, { url: `http://127.0.0.1:${port}`, child });
}

async function call(id: string, actor: string, method: string, args: unknown[]): Promise<void> {
  const r = await fetch(`${nodes.get(id)!.url}/v1/actors/${actor}/${method}?durable=1`, {
    method: 'POST',
    body: JSON.stringify(args),
    headers: { 'content-type': 'application/json' },
  });
  if (!r.ok) throw new Error(`${actor}.${method}: ${r.status} ${await r.text()}`);
}

async function status(id: string): Promise<{ nodes: { nodeId: string; status: string }[]; totals: { ran: number; failed: number } }> {
  return (await fetch(`${nodes.get(id)!.url}/v1/status`)).json() as never;
}

try {
  for (const [i, id] of ['n1', 'n2', 'n3'].entries()) start(id, basePort + i);
  for (const id of nodes.keys())
    await until(`${id} to answer`, 60_000, async () => ((await fetch(nodes.get(id)!.url + '/healthz')).ok ? true : undefined));
  for (let i = 1; i <= 20; i++) await call('n1', `demo/Reminder/r${i}`, 'remind', [20_000, `reminder ${i}`]);
  await call('n2', 'billing/Reminder/invoice-7', 'remind', [3_600_000, 'send the invoice']);
  await call('n2', 'demo/Reminder/flaky', 'failTimes', [4]);
  await call('n2', 'demo/Reminder/flaky', 'remind', [500, 'fails four times']);
  for (const name of ['tick', 'tock']) await call('n2', `demo/Reminder/${name}`, 'every', [4_000, name]);
  await sleep(12_000);
  nodes.get('n1')!.child.kill('SIGKILL');
  console.error('n1 killed; waiting for n2 and n3 to deliver its reminders');
  await until('n1 fenced and its reminders delivered', 90_000, async () => {
    const [s2, s3] = [await status('n2'), await status('n3')];
    const fenced = s2.nodes.some((n) => n.nodeId === 'n1' && n.status === 'fenced');
    return fenced && s2.totals.ran + s3.totals.ran >= 20 ? true : undefined;
  });
  await sleep(3_000);
  const browser = await chromium.launch({ executablePath: browserPath.stdout.trim(), args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1480, height: 1200 } });
    await page.goto(nodes.get('n2')!.url + '/');
    await page.waitForSelector('#tenants tbody tr[data-tenant="billing"]');
    await page.waitForSelector('#failures tbody tr');
    await sleep(1_500);
    await page.screenshot({ path: values.out });
    console.error(`wrote ${values.out}`);
  } finally {
    await browser.close();
  }
} finally {
  for (const { child } of nodes.values()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await sleep(3_000);
  rmSync(root, { recursive: true, force: true });
}

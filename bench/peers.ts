/**
 * bench/peers: keepwork against Restate and Cloudflare's workerd on this machine, one system at a
 * time, with the same load client (an undici Pool, 64 calls in flight over HTTP/1.1 keep-alive).
 * Each system runs the same Counter (add(n) on durable state, returns the total) and Reminder
 * (set(atMs); records when it fired): keepwork three times — plain calls, durable calls, and plain
 * calls with `newActorsInMemory` on (docs/tuning.md).
 *
 *   hot key          add(1) on one key for D seconds: calls/s, p50/p99
 *   first touch      the first call to 1,000 new keys (64 in flight): total time
 *   1,000 keys       add(1) round-robin over those keys for D seconds: calls/s
 *   timers           N reminders on new keys, all due at the same instant (after arming):
 *                    arming rate, firing rate (fired / (last firing − due)), lateness p50/p99
 *   kill -9          64 lanes of add(1) on 64 keys, kill -9 of the process holding the state (the
 *                    rest, e.g. Restate's SDK endpoint, stays up, as in production), start it again:
 *                    time until a call on a key no call was in flight for succeeds, from the kill
 *                    and from the new process's start; acknowledged writes lost
 *
 * The peers (~370 MB of native binaries) and the load client live in their own package,
 * bench/peers/ (package.json + package-lock.json), installed here on first use with
 * `npm ci --prefix bench/peers`; the project's npm ci and npm test never touch them.
 *
 *   npm run bench -- peers [--quick]
 *     [--only keepwork-plain,keepwork-durable,keepwork-new-in-memory,restate,workerd]
 *     [--set name=value …] [--bucket sqlite|folder]
 *
 * --kill-only: only the kill -9 trials, each system fresh (started, then the trial's 2 s of load):
 * how soon it serves again after a short history. Restate replays at its start every record its
 * partitions logged since they last persisted their state, so its figure grows with the work done
 * before the kill (docs/benchmarks.md#peers); the full run's kill comes after every row's work.
 * Writes bench/results/peers-kill.json (peers-kill-quick.json with --quick).
 * --set (repeatable): a tunable for every keepwork system (docs/tuning.md), named in its column.
 * --bucket folder: every keepwork system on a folder bucket instead of the default SQLite file
 * (src/store/open.ts defaultBucketUrl); its columns say `bucket=folder`.
 *
 * Before the first system, the client runs its own call loop for WARM_MS against a local server
 * that answers at once, so that its JIT compiles (~0.3 s of CPU in its first second, two cores
 * shared) fall on no system's rows: the first system measured would otherwise pay for them.
 *
 * --quick: D = 4 s and 500 timers (full: D = 15 s, 2,000 timers, 3 kill -9 trials). Writes
 * bench/results/peers.json (peers-quick.json with --quick).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs, quick, round, setPairs, table, words, writeResult } from './lib.js';
import { FOLDER_BUCKET } from './support/peers/keepwork-command.js';
import { cell, lostWrites, summarizeFiring, summarizeLoad, type FiringSummary, type LoadSummary } from './support/peers/stats.js';
import {
  KeepworkSystem,
  PEER_BINARIES,
  PEERS_DIR,
  RestateSystem,
  sleep,
  WorkerdSystem,
  type ClassName,
  type System,
} from './support/peers/systems.js';

const IN_FLIGHT = 64;
const LOAD_MS = quick ? 4_000 : 15_000;
const KEYS = 1_000;
const TIMERS = quick ? 500 : 2_000;
/** Time to arm every timer before they are all due: generous for the slowest arming seen (~55/s). */
const TIMER_LEAD_MS = Math.max(10_000, TIMERS * 30);
const KILL_TRIALS = quick ? 1 : 3;
const KILL_LOAD_MS = 2_000;
/** The client's warm-up before the first system (warmClient). */
const WARM_MS = 2_000;

/** The part of undici's Pool the bench uses (undici is in bench/peers/, not a project dependency). */
interface PoolLike {
  request(opts: { path: string; method: string; headers: Record<string, string>; body: string }): Promise<{
    statusCode: number;
    body: { text(): Promise<string> };
  }>;
  close(): Promise<void>;
}
type PoolCtor = new (origin: string, opts: Record<string, unknown>) => PoolLike;

function ensurePeers(): PoolCtor {
  if (!existsSync(join(PEERS_DIR, 'node_modules/undici')) || !PEER_BINARIES.every((b) => existsSync(b))) {
    console.log('installing the peers (bench/peers: Restate, workerd, undici; ~370 MB) with npm ci --prefix bench/peers ...');
    const r = spawnSync('npm', ['ci', '--prefix', PEERS_DIR, '--ignore-scripts', '--no-audit', '--no-fund'], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm ci --prefix bench/peers failed');
  }
  const require = createRequire(join(PEERS_DIR, 'package.json'));
  return (require('undici') as { Pool: PoolCtor }).Pool;
}

class Client {
  private readonly pool: PoolLike;
  constructor(
    Pool: PoolCtor,
    origin: string,
    private readonly sys: Pick<System, 'label' | 'request' | 'result'>,
  ) {
    this.pool = new Pool(origin, { connections: IN_FLIGHT, pipelining: 1, headersTimeout: 60_000, bodyTimeout: 60_000 });
  }

  async call(cls: ClassName, key: string, method: string, args: unknown[], write = true): Promise<unknown> {
    const { path, body } = this.sys.request(cls, key, method, args, write);
    const res = await this.pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${this.sys.label} ${path}: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
    return this.sys.result(text ? JSON.parse(text) : null);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** The client's call loop run for WARM_MS against a local server that answers `1` at once. */
async function warmClient(Pool: PoolCtor): Promise<void> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('1'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const echo = {
    label: 'warm-up',
    request: (_c: ClassName, key: string, method: string) => ({ path: `/${key}/${method}`, body: '[1]' }),
    result: (json: unknown) => json,
  };
  const client = new Client(Pool, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, echo);
  try {
    await loadFor(WARM_MS, (i) => client.call('Counter', `k${i % KEYS}`, 'add', [1]));
  } finally {
    await client.close();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** `inFlight` lanes calling `op(i)` until `ms` have passed. */
async function loadFor(ms: number, op: (i: number) => Promise<unknown>): Promise<LoadSummary> {
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const t0 = performance.now();
  const until = t0 + ms;
  const lane = async () => {
    while (performance.now() < until) {
      const s = performance.now();
      try {
        await op(next++);
        latencies.push(performance.now() - s);
      } catch {
        errors++;
        await sleep(10);
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return summarizeLoad(latencies, errors, (performance.now() - t0) / 1000);
}

/** `op(i)` for i < total, `inFlight` at once, each retried up to 3 times; the time it took. */
async function loadAll(total: number, op: (i: number) => Promise<unknown>): Promise<{ ms: number; errors: number }> {
  let next = 0;
  let errors = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (next < total) {
      const i = next++;
      for (let attempt = 0; ; attempt++) {
        try {
          await op(i);
          break;
        } catch (err) {
          errors++;
          if (attempt === 2) throw err;
          await sleep(100);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return { ms: Math.round(performance.now() - t0), errors };
}

interface TimerResult extends FiringSummary {
  armMs: number;
  armedPerSec: number;
  /** Timers armed after their due time (arming took longer than the lead). */
  armedLate: number;
}

async function timers(client: Client, tag: string): Promise<TimerResult> {
  const key = (i: number) => `${tag}-t${i}`;
  const dueMs = Date.now() + TIMER_LEAD_MS;
  let armedLate = 0;
  const armed = await loadAll(TIMERS, async (i) => {
    await client.call('Reminder', key(i), 'set', [dueMs]);
    if (Date.now() > dueMs) armedLate++;
  });
  await sleep(Math.max(0, dueMs - Date.now()));
  // Poll the ones not known to have fired: a sample of 64 per second until a sample is all fired,
  // then every remaining one. Firing times come from the systems themselves, not from the polling.
  const firedAt: (number | null)[] = new Array(TIMERS).fill(null);
  const until = dueMs + 180_000;
  let full = false;
  while (Date.now() < until) {
    const pending = firedAt.flatMap((t, i) => (t === null ? [i] : []));
    if (pending.length === 0) break;
    const batch: number[] = full ? pending : pending.slice(0, IN_FLIGHT);
    let fired = 0;
    await loadAll(batch.length, async (j) => {
      const i = batch[j]!;
      const r = (await client.call('Reminder', key(i), 'fired', [0], false)) as { at: number | null } | null;
      if (r && typeof r.at === 'number') {
        firedAt[i] = r.at;
        fired++;
      }
    }).catch(() => undefined);
    full = fired === batch.length;
    if (!full) await sleep(1_000);
  }
  return { armMs: armed.ms, armedPerSec: Math.round(TIMERS / (armed.ms / 1000)), armedLate, ...summarizeFiring(dueMs, firedAt) };
}

interface KillResult {
  /** From the kill to the first call served. */
  servesAgainMs: number;
  /** From the start of the killed process's successor to the first call served. */
  servesAfterStartMs: number;
  /** Process starts refused before one served (keepwork: its own lease from before the kill was live). */
  refusedStarts: number;
  acked: number;
  lost: number;
  unreadable: number;
}

async function killTrial(sys: System, client: Client, tag: string): Promise<KillResult> {
  const key = (i: number) => `${tag}-r${i}`;
  await loadAll(IN_FLIGHT, (i) => client.call('Counter', key(i), 'add', [0]));
  const maxAcked = new Array<number>(IN_FLIGHT).fill(0);
  let stop = false;
  const lanes = Array.from({ length: IN_FLIGHT }, async (_, i) => {
    while (!stop) {
      try {
        const total = (await client.call('Counter', key(i), 'add', [1])) as number;
        maxAcked[i] = Math.max(maxAcked[i]!, total);
      } catch {
        return;
      }
    }
  });
  await sleep(KILL_LOAD_MS);
  const refusedBefore = sys.refusedStarts ?? 0;
  const killedAt = performance.now();
  sys.kill9();
  stop = true;
  await Promise.all(lanes);
  await sys.restart();
  const startedAt = performance.now();
  let servesAgainMs = NaN;
  let servesAfterStartMs = NaN;
  const until = killedAt + 180_000;
  // A key no call was in flight for at the kill: a system that first finishes the calls it had
  // taken (Restate resumes each one on its key) serves a new call as soon as it serves at all.
  while (performance.now() < until) {
    try {
      await client.call('Counter', `${tag}-probe`, 'add', [0], false);
      servesAgainMs = Math.round(performance.now() - killedAt);
      servesAfterStartMs = Math.round(performance.now() - startedAt);
      break;
    } catch {
      await sleep(5);
    }
  }
  const readBack: (number | null)[] = new Array(IN_FLIGHT).fill(null);
  await loadAll(IN_FLIGHT, async (i) => (readBack[i] = (await client.call('Counter', key(i), 'add', [0], false)) as number)).catch(
    () => undefined,
  );
  const refusedStarts = (sys.refusedStarts ?? 0) - refusedBefore;
  return {
    servesAgainMs,
    servesAfterStartMs,
    refusedStarts,
    acked: maxAcked.reduce((a, b) => a + b, 0),
    ...lostWrites(maxAcked, readBack),
  };
}

interface SystemResult {
  label: string;
  about: string;
  startMs: number;
  hotKey: LoadSummary;
  firstTouch: { keys: number; ms: number; errors: number };
  manyKeys: LoadSummary;
  timers: TimerResult;
  kill: KillResult[];
  error?: string;
}

/**
 * Data folders of systems that ran without error, removed when every system has run: removing
 * thousands of files right before the next system's run would slow that run's file creation on
 * a filesystem such as this machine's root (ext4 without a journal: docs/benchmarks.md, "Files
 * and system calls per actor").
 */
const finished: string[] = [];

/** The rows before the kill -9 trials: the hot key, the first touch, 1,000 keys, the timers. */
async function rows(c: Client, out: Partial<SystemResult>, step: (what: string) => void): Promise<void> {
  step('hot key');
  await c.call('Counter', 'hot', 'add', [0]);
  out.hotKey = await loadFor(LOAD_MS, () => c.call('Counter', 'hot', 'add', [1]));
  step(`first touch of ${KEYS} keys`);
  const first = await loadAll(KEYS, (i) => c.call('Counter', `k${i}`, 'add', [1]));
  out.firstTouch = { keys: KEYS, ...first };
  step(`${KEYS} keys`);
  out.manyKeys = await loadFor(LOAD_MS, (i) => c.call('Counter', `k${i % KEYS}`, 'add', [1]));
  step(`${TIMERS} timers (due ${TIMER_LEAD_MS / 1000} s after arming starts)`);
  out.timers = await timers(c, 'a');
}

/**
 * Before each system: the runs before it removed and everything written flushed (`sync`), so that
 * no system's rows pay for the write-back of another's files (Restate, run after keepwork's
 * three, armed 481–641/s in full runs against 755–843/s alone, 2026-12-07).
 */
function settleDisk(): void {
  for (const dir of finished.splice(0)) rmSync(dir, { recursive: true, force: true });
  spawnSync('sync');
}

async function runSystem(Pool: PoolCtor, sys: System): Promise<SystemResult> {
  settleDisk();
  const dir = mkdtempSync(join(tmpdir(), 'kw-bench-peers-'));
  const out: Partial<SystemResult> = { label: sys.label, about: sys.about, kill: [] };
  let client: Client | undefined;
  const step = (what: string) => console.log(`  ${sys.label}: ${what} (load ${loadavg()[0]!.toFixed(1)})`);
  try {
    const t0 = performance.now();
    const origin = await sys.start(dir);
    out.startMs = Math.round(performance.now() - t0);
    client = new Client(Pool, origin, sys);
    const c = client;
    if (!KILL_ONLY) await rows(c, out, step);
    for (let trial = 0; trial < KILL_TRIALS; trial++) {
      step(`kill -9 trial ${trial + 1}/${KILL_TRIALS}`);
      out.kill!.push(await killTrial(sys, c, `kill${trial}`));
    }
  } catch (err) {
    out.error = (err as Error).message;
    console.log(`  ${sys.label}: FAILED: ${out.error} (logs in ${dir})`);
  } finally {
    await client?.close().catch(() => undefined);
    await sys.stop().catch(() => undefined);
    if (!out.error) finished.push(dir);
  }
  return out as SystemResult;
}

const servesCell = (k: KillResult) => `${cell(k.servesAgainMs)}${k.refusedStarts ? ` (${k.refusedStarts} starts refused)` : ''}`;
const lostCell = (k: KillResult) => `${k.lost} of ${cell(k.acked)}${k.unreadable ? ` (${k.unreadable} keys unreadable)` : ''}`;

/** The table of every row some system has a figure for (`--kill-only`: the kill -9 rows). */
function tableOf(results: SystemResult[]): string {
  const row = (work: string, f: (r: SystemResult) => string) =>
    Object.fromEntries([['work', work], ...results.map((r) => [r.label, r.error && !f(r) ? 'failed' : f(r)])]);
  const measured = (r: Record<string, string>) => Object.entries(r).some(([k, v]) => k !== 'work' && v !== '');
  const rows = [
    row(`one hot key, calls/s (p99 ms)`, (r) => (r.hotKey ? `${cell(r.hotKey.perSec)} (${cell(r.hotKey.p99Ms)})` : '')),
    row(`first call to ${cell(KEYS)} new keys, s`, (r) => (r.firstTouch ? cell(round(r.firstTouch.ms / 1000, 2)) : '')),
    row(`${cell(KEYS)} keys, calls/s (p99 ms)`, (r) => (r.manyKeys ? `${cell(r.manyKeys.perSec)} (${cell(r.manyKeys.p99Ms)})` : '')),
    row(`arming ${cell(TIMERS)} timers on new keys, /s`, (r) => (r.timers ? cell(r.timers.armedPerSec) : '')),
    row(`${cell(TIMERS)} due at once: fired/s`, (r) =>
      r.timers
        ? `${cell(r.timers.firedPerSec)} (${r.timers.fired}/${r.timers.timers} fired${r.timers.armedLate ? `, ${r.timers.armedLate} armed after due` : ''})`
        : '',
    ),
    row(`lateness p50 / p99, ms`, (r) => (r.timers ? `${cell(r.timers.latenessP50Ms)} / ${cell(r.timers.latenessP99Ms)}` : '')),
    row(`kill -9: serves again after, ms`, (r) => r.kill.map(servesCell).join(', ') || '—'),
    row(`kill -9: … after its start, ms`, (r) => r.kill.map((k) => cell(k.servesAfterStartMs)).join(', ') || '—'),
    row(`kill -9: acknowledged writes lost`, (r) => r.kill.map(lostCell).join(', ') || '—'),
  ];
  return table(rows.filter(measured));
}

const args = benchArgs({
  only: { type: 'string' },
  set: { type: 'string', multiple: true },
  bucket: { type: 'string', default: 'sqlite' },
  'kill-only': { type: 'boolean' },
});
const KILL_ONLY = args['kill-only'] === true;
if (!['folder', 'sqlite'].includes(args.bucket!)) throw new Error(`--bucket ${args.bucket}: sqlite or folder`);
/** `--set` and `--bucket folder`: for every keepwork system, after its own tunables. */
const SET = [
  ...Object.entries(setPairs(args.set)).map(([name, value]) => `${name}=${value}`),
  ...(args.bucket === 'folder' ? [FOLDER_BUCKET] : []),
];

const SYSTEMS: Record<string, () => System> = {
  'keepwork-plain': () => new KeepworkSystem(false, SET),
  'keepwork-durable': () => new KeepworkSystem(true, SET),
  'keepwork-new-in-memory': () => new KeepworkSystem(false, ['newActorsInMemory=true', ...SET]),
  restate: () => new RestateSystem(),
  workerd: () => new WorkerdSystem(),
};

async function main() {
  const names = words(args.only) ?? Object.keys(SYSTEMS);
  for (const n of names) if (!SYSTEMS[n]) throw new Error(`--only: unknown system ${n} (${Object.keys(SYSTEMS).join(', ')})`);
  const Pool = ensurePeers();
  const t0 = performance.now();
  const loadBefore = loadavg().map((l) => round(l, 2));
  console.log(
    `bench/peers${quick ? ' --quick' : ''}${KILL_ONLY ? ' --kill-only' : ''}: ${IN_FLIGHT} in flight, load ${LOAD_MS / 1000} s per rate, ${cell(KEYS)} keys, ` +
      `${cell(TIMERS)} timers${quick ? ' (--quick: 500 timers instead of 2,000, 4 s loads, 1 kill -9 trial)' : ''}; ` +
      `load average ${loadBefore.join(' ')} on ${cpus().length} cores; data under ${tmpdir()} (TMPDIR)`,
  );
  await warmClient(Pool);
  const results: SystemResult[] = [];
  for (const n of names) results.push(await runSystem(Pool, SYSTEMS[n]!()));
  settleDisk();
  const loadAfter = loadavg().map((l) => round(l, 2));
  const seconds = round((performance.now() - t0) / 1000, 1);
  console.log();
  console.log(tableOf(results));
  console.log();
  for (const r of results) console.log(`${r.label}: ${r.about}${r.error ? ` — FAILED: ${r.error}` : ''}`);
  console.log(`load average before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')}; ${seconds} s in all`);
  const path = writeResult(`peers${KILL_ONLY ? '-kill' : ''}${quick ? '-quick' : ''}`, {
    inFlight: IN_FLIGHT,
    loadMs: LOAD_MS,
    keys: KEYS,
    timers: TIMERS,
    timerLeadMs: TIMER_LEAD_MS,
    killTrials: KILL_TRIALS,
    loadAverage: { before: loadBefore, after: loadAfter },
    dataUnder: tmpdir(),
    seconds,
    results,
  });
  console.log(`wrote ${path}`);
}

await main();

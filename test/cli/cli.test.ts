import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { DEFAULTS } from '../../src/core/config.js';
import { unitOf } from '../../src/cli/tunables-help.js';
import { waitFor } from '../helpers/wait.js';
import { openStore } from '../../src/store/open.js';
import { parseAddress } from '../../src/core/address.js';
import { entryKey } from '../../src/alarms/keys.js';

const CLI = ['--import', 'tsx', 'src/cli/cli.ts'];

describe('keepwork CLI', () => {
  /** `keepwork start` under node with `nodeFlags`: serves a call through its workers, then stops cleanly on SIGTERM. */
  async function serveOneCallAndStop(nodeFlags: string[]): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-'));
    const child = spawn(
      process.execPath,
      [
        ...nodeFlags,
        ...CLI,
        'start',
        '--data',
        dir,
        '--bucket',
        join(dir, 'bucket'),
        '--port',
        '0',
        '--class',
        'Counter=examples/counter.ts',
      ],
      {
        env: { ...process.env, KEEPWORK_LOG_LEVEL: 'warn' },
      },
    );
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (d: Buffer) => {
          err += d.toString();
          const m = /serving (http:\/\/\S+)/.exec(err);
          if (m) resolve(m[1]!);
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
      });
      const r = await fetch(`${url}/v1/actors/demo/Counter/c/add`, {
        method: 'POST',
        body: '[3]',
        headers: { 'content-type': 'application/json' },
      });
      assert.deepEqual(await r.json(), { result: 3 });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('start serves the example classes over HTTP and stops cleanly on SIGTERM', () => serveOneCallAndStop([]));

  // Node refuses V8 options in a worker's explicit execArgv ("Initiated Worker with invalid
  // execArgv flags"): the event workers inherit the process's options instead of being given them.
  it('start under node with a V8 flag (node --max-old-space-size=512 … start) starts its workers and serves', () =>
    serveOneCallAndStop(['--max-old-space-size=512']));

  it('`npm run keepwork -- start` runs the node as npm’s own child; SIGTERM stops every process of it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-npm-'));
    const args = ['run', 'keepwork', '--', 'start', '--data', dir, '--port', '0', '--class', 'Counter=examples/counter.ts'];
    // Its own process group: the test can tell when every process npm started is gone, and kill them all if not.
    const npm = spawn('npm', args, { detached: true, env: { ...process.env, KEEPWORK_LOG_LEVEL: 'warn' } });
    const group = -npm.pid!;
    const alive = () => {
      try {
        process.kill(group, 0);
        return true;
      } catch {
        return false;
      }
    };
    try {
      await new Promise<void>((resolve, reject) => {
        let err = '';
        npm.stderr.on('data', (d: Buffer) => {
          err += d.toString();
          if (/serving http/.test(err)) resolve();
        });
        npm.once('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
      });
      // The node is the process npm started (sh exec'd into it), not a grandchild behind a launcher:
      // a supervisor's kill -9 of that process stops the node, which then starts again at once.
      const nodePid = (JSON.parse(readFileSync(join(dir, 'node.lock.owner'), 'utf8')) as { pid: number }).pid;
      const parentPid = Number(readFileSync(`/proc/${nodePid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      assert.equal(parentPid, npm.pid, 'the node is npm’s own child');
      const exited = new Promise<number | null>((resolve) => npm.once('exit', resolve));
      process.kill(npm.pid!, 'SIGTERM');
      assert.equal(await exited, 0);
      await waitFor('every process of the group to exit', 30_000, () => !alive());
    } finally {
      if (alive()) process.kill(group, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a SIGTERM while the node is still starting stops it cleanly once started: exit 0, not death by the signal', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-'));
    const args = [...CLI, 'start', '--data', dir, '--port', '0', '--class', 'Counter=examples/counter.ts'];
    const child = spawn(process.execPath, args, { env: { ...process.env, KEEPWORK_LOG_LEVEL: 'warn' } });
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once('exit', (code, signal) => resolve([code, signal])),
    );
    try {
      // The data directory's lock is taken before the bucket is opened and the workers start: the
      // signal lands mid-start (or, on a fast machine, just after), never before the CLI runs.
      await waitFor('the data directory lock', 60_000, () => existsSync(join(dir, 'node.lock.owner')), 5);
      child.kill('SIGTERM');
      assert.deepEqual(await exited, [0, null]);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad arguments with a message and a non-zero exit', () => {
    const bad = spawnSync(process.execPath, [...CLI, 'start', '--port', 'abc'], { encoding: 'utf8' });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /port number/);
    const noClass = spawnSync(process.execPath, [...CLI, 'start', '--port', '0', '--data', join(tmpdir(), 'kw-cli-none')], {
      encoding: 'utf8',
    });
    assert.notEqual(noClass.status, 0);
    assert.match(noClass.stderr, /BAD_CONFIG: classes must name at least one actor class: .*--class Name=path\/to\/module\.js/);
    assert.equal(existsSync(join(tmpdir(), 'kw-cli-none')), false, 'nothing written');
    for (const value of ['-1', '401', '1.5', 'x']) {
      const heap = spawnSync(process.execPath, [...CLI, 'start', '--port', '0', '--heap-growth', value], { encoding: 'utf8' });
      assert.notEqual(heap.status, 0, value);
      assert.match(heap.stderr, /--heap-growth.*must be an integer from 0 to 400/, value);
    }
  });

  it('start --set takes a switch as true, false, 1 or 0; any other value is BAD_CONFIG before anything is written', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-'));
    try {
      const data = join(dir, 'data');
      const start = (...set: string[]) =>
        spawnSync(process.execPath, [...CLI, 'start', '--port', '0', '--data', data, ...set.flatMap((s) => ['--set', s])], {
          encoding: 'utf8',
        });
      // No --class: a start whose tunables are accepted stops at the class check, which comes after them.
      const accepted = start('sweepAdaptive=false', 'alarmsInMemory=0', 'newActorsInMemory=1', 'sweepAdaptive=true');
      assert.equal(accepted.status, 1, accepted.stderr);
      assert.match(accepted.stderr, /classes must name at least one actor class/);
      for (const value of ['2', 'yes']) {
        const bad = start('leasePeriodMs=2000', `sweepAdaptive=${value}`);
        assert.equal(bad.status, 1, bad.stderr);
        assert.match(bad.stderr, new RegExp(`^keepwork: BAD_CONFIG: sweepAdaptive must be true, false, 1 or 0, got "${value}"$`, 'm'));
      }
      assert.equal(existsSync(data), false, 'no data dir made');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('start --help lists every tunable with its default and unit, and no {} defaults', () => {
    const help = spawnSync(process.execPath, [...CLI, 'start', '--help'], { encoding: 'utf8' });
    assert.equal(help.status, 0, help.stderr);
    assert.doesNotMatch(help.stdout, /default: \{\}/);
    assert.match(help.stdout, /--bucket <url>[\s\S]*\(default: sqlite:<data>\/bucket\.db, or\s+the folder <data>\/bucket if it exists\)/);
    assert.match(help.stdout, /--heap-growth <pct>[\s\S]*\(default: 20\)/);
    for (const [name, value] of Object.entries(DEFAULTS)) {
      const unit = unitOf(name as keyof typeof DEFAULTS);
      assert.match(help.stdout, new RegExp(`^  ${name} +${value} +${unit.replace(/[()]/g, '\\$&')}\\b`, 'm'), `${name} ${value} ${unit}`);
    }
  });

  it('start refuses a bad class module at start: BAD_CLASS with its path, exit 1, no bucket written', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-'));
    try {
      const bad = join(dir, 'no-default.mjs');
      writeFileSync(bad, 'export const methods = {}');
      const data = join(dir, 'data');
      const r = spawnSync(process.execPath, [...CLI, 'start', '--data', data, '--port', '0', '--class', `Bad=${bad}`], {
        encoding: 'utf8',
      });
      assert.equal(r.status, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(`^keepwork: BAD_CLASS: actor class Bad \\(${bad.replace(/[.]/g, '\\.')}\\): it has no default export`, 'm'),
      );
      assert.equal(existsSync(join(data, 'bucket.db')), false);
      assert.equal(existsSync(join(data, 'bucket')), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('start takes the --tls-* flags: half a pair is BAD_CONFIG naming the missing flag, exit 1, nothing written', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-'));
    try {
      const data = join(dir, 'data');
      const r = spawnSync(process.execPath, [...CLI, 'start', '--data', data, '--port', '0', '--tls-cert', join(dir, 'node.pem')], {
        encoding: 'utf8',
      });
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /^keepwork: BAD_CONFIG: tls\.key \(--tls-key\) is required with tls\.cert \(--tls-cert\)$/m);
      assert.equal(existsSync(data), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bucket migrate converts a folder bucket of the older format that other commands refuse', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-'));
    try {
      const entry = join(dir, 'alarms', 't', '001796115600000', 'C.t', '6a');
      mkdirSync(entry, { recursive: true });
      writeFileSync(join(entry, '00000000000000000001-ab~'), ''); // where format 1 stored the entry
      const refused = spawnSync(process.execPath, [...CLI, 'alarms', 'ls', '--bucket', dir], { encoding: 'utf8' });
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /keepwork bucket migrate --bucket/);
      const migrate = spawnSync(process.execPath, [...CLI, 'bucket', 'migrate', '--bucket', dir], { encoding: 'utf8' });
      assert.equal(migrate.status, 0, migrate.stderr);
      assert.match(migrate.stdout, /format 1 → 2/);
      assert.ok(existsSync(join(dir, 'alarms', 't', '001796+', '115+', '600+', '000', 'C.t', '6a', '00000000000000000001-ab~')));
      const ls = spawnSync(process.execPath, [...CLI, 'alarms', 'ls', '--bucket', dir, '--json'], { encoding: 'utf8' });
      assert.equal(ls.status, 0, ls.stderr);
      assert.match(ls.stdout, /2026-12-01T09:00:00.000Z/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('start on a busy port exits 1 with PORT_UNAVAILABLE before it writes to the bucket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-'));
    const taken = createServer();
    await new Promise<void>((ok) => taken.listen(0, '127.0.0.1', ok));
    try {
      const { port } = taken.address() as AddressInfo;
      const data = join(dir, 'data');
      const r = spawnSync(
        process.execPath,
        [...CLI, 'start', '--data', data, '--port', String(port), '--class', 'Counter=examples/counter.ts'],
        {
          encoding: 'utf8',
        },
      );
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`^keepwork: PORT_UNAVAILABLE: cannot listen on 127\\.0\\.0\\.1:${port}: it is in use`, 'm'));
      assert.equal(existsSync(join(data, 'bucket.db')), false);
      assert.equal(existsSync(join(data, 'bucket')), false);
    } finally {
      await new Promise((ok) => taken.close(ok));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bucket migrate refuses a SQLite bucket (it has no on-disk format to convert)', () => {
    const r = spawnSync(process.execPath, [...CLI, 'bucket', 'migrate', '--bucket', `sqlite:${join(tmpdir(), 'kw-cli-migrate.db')}`], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /only folder buckets have an on-disk format to convert/);
  });

  it('a SQLite bucket that does not exist is refused by a bucket command, not created', () => {
    const file = join(tmpdir(), `kw-cli-nothing-${process.pid}.db`);
    const r = spawnSync(process.execPath, [...CLI, 'status', '--bucket', `sqlite:${file}`], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, new RegExp(`no bucket at ${file} \\(the SQLite file does not exist\\)`));
    assert.equal(existsSync(file), false);
  });

  it('status --json prints {nodes, index} with or without the index listing (index null with --no-index)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-'));
    try {
      const store = openStore(dir);
      const address = parseAddress('t/C/x');
      await store.put(entryKey({ address, dueMs: Date.UTC(2026, 0, 1), tag: { generation: 1, nonce: 'ab' } }), new Uint8Array());
      await store.close();
      const shapes = [[], ['--index'], ['--no-index']].map((flags) => {
        const r = spawnSync(process.execPath, [...CLI, 'status', '--json', ...flags, '--bucket', dir], { encoding: 'utf8' });
        assert.equal(r.status, 0, r.stderr);
        return JSON.parse(r.stdout) as { nodes: unknown[]; index: { tenant: string; entries: number }[] | null };
      });
      for (const s of shapes) assert.deepEqual(Object.keys(s), ['nodes', 'index']);
      for (const s of shapes) assert.deepEqual(s.nodes, []);
      const tenants = shapes.map((s) => s.index?.map((t) => [t.tenant, t.entries]) ?? null);
      assert.deepEqual(tenants, [[['t', 1]], [['t', 1]], null]);
      assert.equal(shapes[2]!.index, null);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bucket commands default to the bucket inside --data: bucket.db, or the folder bucket if there is one', () => {
    const data = mkdtempSync(join(tmpdir(), 'kw-cli-data-'));
    try {
      const none = spawnSync(process.execPath, [...CLI, 'status', '--data', data], { encoding: 'utf8' });
      assert.equal(none.status, 1);
      assert.match(none.stderr, new RegExp(`no bucket at ${join(data, 'bucket.db')} \\(the SQLite file does not exist\\)`));
      mkdirSync(join(data, 'bucket'));
      const folder = spawnSync(process.execPath, [...CLI, 'status', '--data', data], { encoding: 'utf8' });
      assert.equal(folder.status, 1);
      assert.match(folder.stderr, new RegExp(`no keepwork bucket at ${join(data, 'bucket')}: the folder is empty`));
      assert.equal(existsSync(join(data, 'bucket.db')), false);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});

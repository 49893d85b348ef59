import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const CLI = ['--import', 'tsx', 'src/cli/cli.ts'];

describe('keepwork CLI', () => {
  it('start serves the example classes over HTTP and stops cleanly on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-cli-'));
    const child = spawn(
      process.execPath,
      [...CLI, 'start', '--data', dir, '--bucket', join(dir, 'bucket'), '--port', '0', '--class', 'Counter=examples/counter.ts'],
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
      const r = await fetch(`${url}/v1/actors/demo/Counter/c/add`, { method: 'POST', body: '[3]' });
      assert.deepEqual(await r.json(), { result: 3 });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
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
    assert.match(noClass.stderr, /classes must name at least one actor class/);
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
});

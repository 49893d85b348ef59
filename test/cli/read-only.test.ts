/**
 * The CLI's commands that only look at a bucket write nothing, anywhere in the folder they are
 * pointed at: run against a folder of other files, a fresh empty folder and a real bucket, the
 * tree (names and SHA-256 of every file) is the same after as before. A folder that is not a
 * bucket is refused saying so, not steered to `bucket migrate`; `bucket migrate` refuses a folder
 * that is not an older keepwork bucket and changes nothing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { encodeNode, nodeKey } from '../../src/leases/records.js';
import { FsStore } from '../../src/store/fs/store.js';
import { tempDirs } from '../helpers/temp.js';
import { treeOf } from '../helpers/tree.js';

const CLI = ['--import', 'tsx', 'src/cli/cli.ts'];
const tempDir = tempDirs('kw-cli-read-only-');

/** The commands that only read, each with its arguments after `--bucket <folder>`. */
const LOOKS: string[][] = [['status'], ['status', '--json'], ['alarms', 'ls'], ['index', 'check'], ['actor', 'inspect', 'demo/Counter/c']];

function run(args: string[]) {
  return spawnSync(process.execPath, [...CLI, ...args], { encoding: 'utf8', env: { ...process.env, KEEPWORK_LOG_LEVEL: 'warn' } });
}

/** `look` pointed at `folder`: its answer; the folder's tree is asserted unchanged. */
function lookAt(folder: string, look: string[]) {
  const before = treeOf(folder);
  const r = run([...look, '--bucket', folder]);
  assert.deepEqual(treeOf(folder), before, `${look.join(' ')} changed ${folder}: ${r.stderr}`);
  return r;
}

describe('read-only CLI commands write nothing', () => {
  it('a folder of other files: refused as not a bucket, naming what it holds, never steered to migrate; nothing written', () => {
    const folder = tempDir();
    writeFileSync(join(folder, 'passwd'), 'root:x:0:0\n');
    mkdirSync(join(folder, 'ssh'));
    writeFileSync(join(folder, 'ssh', 'config'), 'Host *\n');
    for (const look of LOOKS) {
      const r = lookAt(folder, look);
      assert.equal(r.status, 1, `${look.join(' ')}: ${r.stdout}`);
      assert.match(r.stderr, /is not a keepwork bucket: it holds "passwd", "ssh\/"/);
      assert.doesNotMatch(r.stderr, /migrate/);
    }
  });

  it('a fresh empty folder: refused as empty, nothing created in it (no ~tmp, no lock file, no stamp)', () => {
    const folder = tempDir();
    for (const look of LOOKS) {
      const r = lookAt(folder, look);
      assert.equal(r.status, 1, `${look.join(' ')}: ${r.stdout}`);
      assert.match(r.stderr, /no keepwork bucket at .*: the folder is empty/);
    }
    assert.deepEqual(treeOf(folder), []);
  });

  it('a bucket: every look answers and leaves it byte for byte as it was', async () => {
    const folder = tempDir();
    const store = new FsStore(folder);
    const n1 = { nodeId: 'n1', epoch: 1, addr: 'http://127.0.0.1:1', tenants: null, classes: ['Counter'], expiresAtMs: 0 };
    await store.put(nodeKey('n1'), encodeNode({ ...n1, state: 'released' }));
    await store.close();
    const answers = LOOKS.map((look) => lookAt(folder, look));
    assert.deepEqual(
      answers.slice(0, 4).map((r) => r.status),
      [0, 0, 0, 0],
      answers.map((r) => r.stderr).join('\n'),
    );
    assert.match(answers[0]!.stdout, /n1/);
  });
});

describe('bucket migrate', () => {
  it('refuses a folder that is not an older keepwork bucket (other files, or empty), naming what it found, and changes nothing', () => {
    const random = tempDir();
    writeFileSync(join(random, 'notes.txt'), 'mine\n');
    mkdirSync(join(random, 'alarms')); // one keepwork-like name does not make a bucket
    const empty = tempDir();
    for (const [folder, why] of [
      [random, /is not a keepwork bucket: it holds "notes\.txt".*nothing was changed/],
      [empty, /is empty: no older bucket to convert.*nothing was changed/],
    ] as const) {
      const before = treeOf(folder);
      const r = run(['bucket', 'migrate', '--bucket', folder]);
      assert.equal(r.status, 1, r.stdout);
      assert.match(r.stderr, why);
      assert.deepEqual(treeOf(folder), before);
    }
  });
});

/**
 * fsync where it does nothing (fs/io.ts `fsyncDoesNothing`): on tmpfs and ramfs the folder bucket
 * and a worker's new actor files skip it. The expected answer for each folder comes from the
 * kernel's own mount table, not from statfs.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fsyncDoesNothing } from '../../src/store/fs/io.js';
import { FsStore } from '../../src/store/fs/store.js';

/** The file system type of the mount holding `path`, from /proc/self/mountinfo (the longest mount point that contains it). */
function mountType(path: string): string | undefined {
  if (!existsSync('/proc/self/mountinfo')) return undefined;
  const real = realpathSync(path);
  let best: { at: string; type: string } | undefined;
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const at = left.split(' ')[4]!.replace(/\\040/g, ' ');
    const inside = at === '/' || real === at || real.startsWith(at + '/');
    if (inside && (!best || at.length >= best.at.length)) best = { at, type: right.split(' ')[0]! };
  }
  return best?.type;
}

const inMemory = (type: string | undefined) => type === 'tmpfs' || type === 'ramfs';

describe('fsync on a file system that keeps files in memory only', () => {
  const made: string[] = [];
  after(() => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });
  const folders = [tmpdir(), process.cwd(), '/dev/shm'].filter((d) => existsSync(d));

  it('is known to do nothing exactly where the mount table says tmpfs or ramfs', (t) => {
    if (!existsSync('/proc/self/mountinfo')) return t.skip('no /proc/self/mountinfo to check against');
    for (const dir of folders) assert.equal(fsyncDoesNothing(dir), inMemory(mountType(dir)), `${dir} (${mountType(dir)})`);
  });

  it('is not skipped for a path that cannot be asked about', () => {
    assert.equal(fsyncDoesNothing(join(tmpdir(), 'kw-not-there', 'x')), false);
  });

  it('is skipped by the folder bucket there, which still reads back what it wrote', async (t) => {
    if (!existsSync('/proc/self/mountinfo')) return t.skip('no /proc/self/mountinfo to check against');
    for (const dir of folders) {
      const root = mkdtempSync(join(dir, 'kw-fs-io-'));
      made.push(root);
      const store = new FsStore(root);
      const off = new FsStore(root, { fsync: false });
      try {
        assert.equal(store.fsyncs, !inMemory(mountType(root)), `${root} (${mountType(root)})`);
        assert.equal(off.fsyncs, false, 'fsync: false is kept everywhere');
        await store.put('a/b', new TextEncoder().encode('x'), { ifNoneMatch: '*' });
        assert.equal(new TextDecoder().decode((await store.get('a/b'))!.body), 'x');
        await store.delete('a/b');
        assert.equal(await store.get('a/b'), null);
      } finally {
        await store.close();
        await off.close();
      }
    }
  });
});

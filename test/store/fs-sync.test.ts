import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FolderSyncs } from '../../src/store/fs/sync.js';
import { settledYet, turn } from '../helpers/settled.js';

/** An fsync seam that records each call and finishes only when the test says so. */
function controlled() {
  const calls: { dir: string; finish: (err?: Error) => void }[] = [];
  const fsyncDir = (dir: string) =>
    new Promise<void>((resolve, reject) => calls.push({ dir, finish: (err) => (err ? reject(err) : resolve()) }));
  return { calls, syncs: new FolderSyncs(fsyncDir) };
}

describe('FolderSyncs', () => {
  it('runs one fsync for the writes that ask for a folder at once', async () => {
    const { calls, syncs } = controlled();
    const waits = Array.from({ length: 5 }, () => syncs.sync('/b/holds'));
    await turn();
    assert.deepEqual(
      calls.map((c) => c.dir),
      ['/b/holds'],
    );
    calls[0]!.finish();
    for (const w of waits) assert.equal(await settledYet(w), true, 'every caller is answered by that one fsync');
    assert.equal(calls.length, 1);
    assert.equal(syncs.size, 0, 'a folder with nothing queued is forgotten');
  });

  it('does not count an fsync that was already running: a later caller waits for the next one', async () => {
    const { calls, syncs } = controlled();
    const early = syncs.sync('/b/d');
    await turn(); // the first fsync has started
    const late = [syncs.sync('/b/d'), syncs.sync('/b/d')];
    await turn();
    assert.equal(calls.length, 1, 'the next fsync waits for the running one');
    calls[0]!.finish();
    await early;
    assert.equal(await settledYet(late[0]!), false, 'the running fsync may predate the late caller’s change');
    assert.equal(calls.length, 2, 'one fsync for both late callers');
    calls[1]!.finish();
    await Promise.all(late);
    assert.equal(syncs.size, 0);
  });

  it('gives every caller that joined a failed fsync the error, and the next caller a new fsync', async () => {
    const { calls, syncs } = controlled();
    const joined = [syncs.sync('/b/d'), syncs.sync('/b/d')];
    await turn();
    calls[0]!.finish(Object.assign(new Error('EIO'), { code: 'EIO' }));
    for (const p of joined) await assert.rejects(p, /EIO/);
    const again = syncs.sync('/b/d');
    await turn();
    assert.equal(calls.length, 2);
    calls[1]!.finish();
    await again;
  });

  it('keeps folders apart', async () => {
    const { calls, syncs } = controlled();
    const a = syncs.sync('/b/a');
    const b = syncs.sync('/b/b');
    await turn();
    assert.deepEqual(calls.map((c) => c.dir).sort(), ['/b/a', '/b/b']);
    calls.find((c) => c.dir === '/b/b')!.finish();
    await b;
    assert.equal(await settledYet(a), false, 'a waits for its own folder');
    calls.find((c) => c.dir === '/b/a')!.finish();
    await a;
  });
});

/**
 * fsync on a thread's own fsync threads (fs/fsync-threads.ts): every fsync settles, at most
 * `threadsMax` helpers start however many are outstanding, a failed fsync rejects with the system
 * error's code, and the helpers do not keep the process alive once nothing is outstanding (this
 * file would not end).
 */
import assert from 'node:assert/strict';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FsyncThreads } from '../../src/store/fs/fsync-threads.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kw-fsync-threads-');

describe('FsyncThreads', () => {
  it('fsyncs every file outstanding at once on at most threadsMax helpers', async () => {
    const dir = tempDir();
    const threads = new FsyncThreads(3);
    const fds = Array.from({ length: 40 }, (_, i) => {
      const fd = openSync(join(dir, `f${i}`), 'w');
      writeSync(fd, `body ${i}`);
      return fd;
    });
    try {
      await Promise.all(fds.map((fd) => threads.fsync(fd)));
      assert.ok(threads.size >= 1 && threads.size <= 3, `helpers started: ${threads.size}`);
      await threads.fsync(fds[0]!); // again, once all are idle
      assert.ok(threads.size <= 3);
    } finally {
      fds.forEach((fd) => closeSync(fd));
    }
  });

  it('rejects a failed fsync with the system error code', async () => {
    const threads = new FsyncThreads(1);
    const notOpen = 1_000_000; // past any descriptor this process has: EBADF
    await assert.rejects(threads.fsync(notOpen), (e: NodeJS.ErrnoException) => e.code === 'EBADF' && e instanceof Error);
  });
});

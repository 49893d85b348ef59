/**
 * Preloaded (`--import`) into processes that tests and benches start, so none outlives its parent even
 * when that one is killed with SIGKILL and can clean nothing up: once the parent is gone (the
 * process is re-parented), this process kills itself. Plain JavaScript: worker threads inherit
 * the `--import` flags and load it before any TypeScript loader is in place.
 */
import { isMainThread } from 'node:worker_threads';

if (isMainThread) {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
  }, 500).unref();
}

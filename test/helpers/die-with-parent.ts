/**
 * Preloaded (`--import`) into processes that tests start, so none outlives its test process even
 * when that one is killed with SIGKILL and can clean nothing up: once the parent is gone (the
 * process is re-parented), this process kills itself.
 */
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
}, 500).unref();

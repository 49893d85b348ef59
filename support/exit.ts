/**
 * Cleanup that runs however a test or bench process ends: normally, or stopped by a signal
 * (node:test sends SIGTERM to a test file that ran past its timeout; a terminal sends SIGINT).
 * A signal would skip 'exit' handlers, so it is turned into process.exit(128 + n), which runs
 * them. Handlers must be synchronous (kill children, remove folders).
 */
const handlers: Array<() => void> = [];
let installed = false;

export function onExit(fn: () => void): void {
  handlers.push(fn);
  if (installed) return;
  installed = true;
  process.once('exit', () => {
    for (const h of handlers.splice(0)) {
      try {
        h();
      } catch (e) {
        console.error('exit cleanup failed:', e);
      }
    }
  });
  for (const [signal, n] of [
    ['SIGTERM', 15],
    ['SIGINT', 2],
    ['SIGHUP', 1],
  ] as const) {
    process.once(signal, () => process.exit(128 + n));
  }
}

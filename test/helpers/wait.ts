/**
 * The one way tests wait: poll a condition until it holds or a deadline passes, then fail saying
 * what was awaited (and the probe's last error, if it threw). Time is the injected clock's when a
 * test runs on one (a SimClock only moves when the test advances it), the wall clock otherwise.
 *
 *   await waitFor('the alarm to fire', 10_000, async () => (await fired()).length === 1);
 *   const rows = await waitFor('both nodes', 30_000, async () => (rows.length === 2 ? rows : undefined));
 *
 * The probe is done when it returns anything but undefined, null or false; that value is returned.
 * A probe that throws is tried again (its error is named if time runs out), unless `retryOn`
 * says the error is not one to wait out: then it fails at once.
 */
import { SystemClock, type Clock } from '../../src/core/clock.js';

export interface WaitOptions {
  /** Time between probes (default 50 ms). */
  everyMs?: number;
  /** The clock to read the deadline from and sleep on (default: the wall clock). */
  clock?: Clock;
  /** Which errors thrown by the probe mean "not yet" (default: all). */
  retryOn?: (e: unknown) => boolean;
}

const wallClock = new SystemClock();

export async function waitFor<T>(
  what: string,
  boundMs: number,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: WaitOptions | number = {},
): Promise<T> {
  const o = typeof options === 'number' ? { everyMs: options } : options;
  const clock = o.clock ?? wallClock;
  const deadline = clock.now() + boundMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== null && v !== false) return v;
    } catch (e) {
      if (o.retryOn && !o.retryOn(e)) throw e;
      last = e;
    }
    if (clock.now() >= deadline)
      throw new Error(`timed out after ${boundMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await clock.sleep(o.everyMs ?? 50);
  }
}

/**
 * Lets `ms` of wall time pass: for as long as a fault a test injects lasts (a lock held, a process
 * stopped), or as a window in which something must not happen. Never a way to wait for something
 * to happen: that is waitFor's job.
 */
export function elapse(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Watching promises settle in tests that drive fsync seams by hand: `turn()` lets every queued
 * promise callback and I/O callback run (one pass of the event loop), `settledYet(p)` says
 * whether `p` has settled by then.
 */
export const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function settledYet(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await turn();
  return done;
}

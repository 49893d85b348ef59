/**
 * A task's start gate: one int32, shared by the main thread and the worker running the task, that
 * says how far into the task handlers have begun, and lets the main thread give the task up so
 * that no handler of it begins afterwards.
 *
 *   value n ≥ 0:      the handlers of events 0 … n-1 may have begun; events n … never reached theirs
 *   value -(n + 1):   given up (revoked) with n begun; no handler of the task begins any more
 *
 *   worker: beginEvent(gate, i) ── before event i's handler: n → max(n, i + 1); false once revoked
 *   main:   revokeTask(gate)    ── the task's worker was restarted under it: n → -(n + 1), returns n
 *
 * Both are atomic on the same cell, so "not begun" is final once the main thread has read it: an
 * event counted as not begun can run again on another worker without having run on the old one,
 * even if that thread is still alive (terminating takes a moment; a native loop never ends).
 * Events of a task run in order, so those not begun are the task's tail.
 */

/** A new gate (nothing begun), shareable with a worker thread: post it along with the task. */
export function newStartGate(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4));
}

/** Worker: event `i`'s handler is about to begin. False: the task was given up, the handler must not run. */
export function beginEvent(gate: Int32Array, i: number): boolean {
  for (;;) {
    const n = Atomics.load(gate, 0);
    if (n < 0) return false;
    if (n > i) return true;
    if (Atomics.compareExchange(gate, 0, n, i + 1) === n) return true;
  }
}

/** Main thread: gives the task up; returns how many of its events (its head) may have begun. Idempotent. */
export function revokeTask(gate: Int32Array): number {
  for (;;) {
    const n = Atomics.load(gate, 0);
    if (n < 0) return -n - 1;
    if (Atomics.compareExchange(gate, 0, n, -n - 1) === n) return n;
  }
}

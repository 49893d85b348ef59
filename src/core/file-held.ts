/**
 * An actor's file held by another connection of this process, told apart from a handler's failure.
 * A node opens each actor's file in SQLite's EXCLUSIVE locking mode (workers/actor-db.ts), and one
 * connection has it open at a time, so the only holder an open can meet is a worker thread that was
 * stopped and has not ended: its replacement's tasks wait for its end (main/worker-group.ts), but
 * only RETIRE_WAIT_MS, and a thread stuck in native code (a runaway SQL statement, which nothing
 * can interrupt) keeps the files of the actors it had open until it ends, which may be never. Such an open
 * becomes OVERLOADED with `details.resource` "actorFile" (nothing ran), and the node's health says
 * so (http/status-health.ts): restarting the node ends the thread.
 */
import { Overloaded, isOverloadedBy } from './errors.js';

/** How long a caller refused for a held file is told to wait. */
const RETRY_AFTER_MS = 1_000;

/** The OVERLOADED error for a failure to `what` (e.g. "open actor database …") because another connection holds the file. */
export function actorFileHeld(what: string, cause: unknown): InstanceType<typeof Overloaded> {
  return new Overloaded(
    `${what}: the file is held by a worker thread that was stopped and has not ended (stuck in native code, such as ` +
      'a runaway SQL statement, which only a restart of the node ends); its actors cannot be opened until it ends',
    { cause, details: { resource: 'actorFile', retryAfterMs: RETRY_AFTER_MS } },
  );
}

/** Whether `e` is the OVERLOADED error `actorFileHeld` makes (live, or as data from a worker). */
export function isActorFileHeld(e: unknown): e is { code: 'OVERLOADED'; message: string } {
  return isOverloadedBy(e, 'actorFile');
}

/**
 * Several events in one worker task (one Piscina round trip instead of one each): they run one
 * after another, in order, each through the pipeline exactly as alone — its own transaction, its
 * own result, its own error, its own time limit. A failing event does not stop the ones after it.
 *
 * Group commit: a durable call hands back its result at its commit (pipeline.ts, OnCommitted), and
 * the batch goes on with the next event while that call's upload is in flight, so the commits of a
 * batch share links. Its outcome is then marked `pending` and its final result — once a link
 * holding the commit is in the bucket, or the error if it never gets there — is in `later`.
 */
import type { ActorEvent, BatchOutcome, EventResult } from './messages.js';
import type { OnCommitted } from './pipeline.js';
import { errorData } from './results.js';

export interface BatchRun {
  outcomes: BatchOutcome[];
  /** Index → final outcome of each event whose outcome is `pending` (a durable call awaiting its link). */
  later: Map<number, Promise<BatchOutcome>>;
}

/**
 * `begin(i)`: claims event i's handler start (start-gate.ts), handed to `run` for the pipeline to
 * call just before the handler; false once the task was given up.
 */
export async function runBatch(
  run: (event: ActorEvent, committed?: OnCommitted, begin?: () => boolean) => Promise<EventResult>,
  events: readonly ActorEvent[],
  ran: () => void = () => undefined,
  begin?: (i: number) => boolean,
): Promise<BatchRun> {
  const outcomes: BatchOutcome[] = [];
  const later = new Map<number, Promise<BatchOutcome>>();
  for (const [i, event] of events.entries()) {
    let early: EventResult | undefined;
    let atCommit: () => void = () => undefined;
    const committed = new Promise<void>((resolve) => (atCommit = resolve));
    const final = settled(
      run(
        event,
        (r) => {
          early = r;
          atCommit();
        },
        begin && (() => begin(i)),
      ),
    );
    await Promise.race([committed, final]);
    if (early) {
      outcomes.push({ ...early, pending: true } as EventResult);
      later.set(i, final);
    } else outcomes.push(await final);
    ran();
  }
  return { outcomes, later };
}

function settled(p: Promise<EventResult>): Promise<BatchOutcome> {
  return p.then(
    (r) => r,
    (err: unknown) => ({ type: 'thrown', error: errorData(err) }),
  );
}

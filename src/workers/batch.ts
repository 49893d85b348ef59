/**
 * Several events in one worker task (one Piscina round trip instead of one each): they run one
 * after another, in order, each through the pipeline exactly as alone — its own transaction, its
 * own result, its own error, its own time limit. A failing event does not stop the ones after it.
 */
import type { ActorEvent, BatchOutcome, EventResult } from './messages.js';
import { errorData } from './pipeline.js';

export async function runBatch(
  run: (event: ActorEvent) => Promise<EventResult>,
  events: readonly ActorEvent[],
  ran: () => void = () => undefined,
): Promise<BatchOutcome[]> {
  const out: BatchOutcome[] = [];
  for (const event of events) {
    try {
      out.push(await run(event));
    } catch (err) {
      out.push({ type: 'thrown', error: errorData(err) });
    }
    ran();
  }
  return out;
}

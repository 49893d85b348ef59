/**
 * What the event pipeline (pipeline.ts) and alarm delivery (deliver.ts) are given: every
 * dependency injected, so the same code runs in a Piscina worker (event-worker.ts builds these)
 * and inline in the tests and the simulator.
 */
import type { Clock } from '../core/clock.js';
import type { Settings } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import type { Random } from '../core/random.js';
import type { RetrySettings } from '../alarms/retry.js';
import type { ActorSlots } from './actor-slots.js';
import type { ActorDefinition } from './define-actor.js';
import type { IdempotencySettings } from './idempotency.js';
import type { IndexDeps } from './index-owner.js';
import type { EventResult } from './messages.js';

export type PipelineSettings = IndexDeps['config'] & RetrySettings & IdempotencySettings & Settings<'handlerTimeoutMs' | 'retryMaxMs'>;

export interface PipelineDeps extends IndexDeps {
  clock: Clock;
  random: Random;
  config: PipelineSettings;
  log: Logger;
  slots: ActorSlots;
  /** The class's definition; rejects with NotFound for a class this node does not serve. */
  loadClass(className: string): Promise<ActorDefinition>;
  /** Set per event (runEvent) for a durable call whose caller may start the actor's next event once it committed. */
  committed?: (early: EventResult) => void;
  /** Set per event in a worker: claims the event's handler start (start-gate.ts); false: do not run it. */
  begin?: () => boolean;
}

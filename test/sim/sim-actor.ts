/**
 * The actor class every simulated node serves: a client sets, clears or leaves its alarm; the
 * alarm handler records each delivery (the "no delivery before the due time" check), sometimes
 * fails (committed retries) and sometimes sets the next alarm itself. Its choices come from the
 * seed, in the deterministic order the simulation calls it.
 */
import type { Clock } from '../../src/core/clock.js';
import type { SeededRandom } from '../../src/core/random.js';
import { defineActor, type ActorDefinition } from '../../src/workers/define-actor.js';

export const SIM_CLASS = 'Alarmed';

export interface FireRecorder {
  fired(actor: string, scheduledAtMs: number, nowMs: number): void;
  rescheduled(): void;
}

/** The next point of the alarm grid at least `aheadSteps` steps after `nowMs`. */
export function gridTime(nowMs: number, stepMs: number, aheadSteps: number): number {
  return (Math.floor(nowMs / stepMs) + aheadSteps) * stepMs;
}

export interface SimActorOptions {
  stepMs: number;
  failP: number;
  rescheduleP: number;
  /** Chance that a run of the alarm handler takes up to slowMaxMs (handlers do I/O). */
  slowP: number;
  slowMaxMs: number;
}

export function simActor(random: SeededRandom, o: SimActorOptions, rec: FireRecorder): (clock: Clock) => ActorDefinition {
  return (clock) => definition(random, o, rec, clock);
}

function definition(random: SeededRandom, o: SimActorOptions, rec: FireRecorder, clock: Clock): ActorDefinition {
  return defineActor({
    init(ctx) {
      ctx.sql.exec('CREATE TABLE IF NOT EXISTS calls (n INTEGER)');
    },
    async alarm(ctx, info) {
      rec.fired(`${ctx.address.tenant}/${ctx.address.className}/${ctx.address.name}`, info.scheduledAt, ctx.now());
      if (random.float() < o.slowP) await clock.sleep(1 + random.int(o.slowMaxMs));
      if (random.float() < o.failP) throw new Error('sim: the alarm handler failed');
      if (random.float() < o.rescheduleP) {
        ctx.setAlarm(gridTime(ctx.now(), o.stepMs, random.int(7) - 1));
        rec.rescheduled();
      }
    },
    methods: {
      /** `id`: a durable call's own (drivers.ts), which the durable check looks for in the bucket's head. */
      set(ctx, atMs: number, id = 1) {
        ctx.sql.prepare('INSERT INTO calls VALUES (?)').run(id);
        ctx.setAlarm(atMs);
      },
      clear(ctx) {
        ctx.clearAlarm();
      },
      touch(ctx, id = 2) {
        ctx.sql.prepare('INSERT INTO calls VALUES (?)').run(id);
      },
    },
  });
}

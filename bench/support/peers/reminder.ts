/**
 * bench/peers' Reminder on keepwork: set(atMs) sets the actor's alarm; the alarm records when it
 * ran (ctx.now()); fired() answers { at, due } (at null until it fired).
 */
import { defineActor, type ActorContext, type AlarmInfo } from '../../../src/actor.js';

export default defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE reminder (id INTEGER PRIMARY KEY, due INTEGER, at INTEGER)');
  },
  alarm(ctx: ActorContext, info: AlarmInfo) {
    ctx.sql.prepare('UPDATE reminder SET at = ? WHERE id = 1').run(ctx.now());
    void info;
  },
  methods: {
    set(ctx: ActorContext, atMs: unknown) {
      ctx.sql.prepare('INSERT OR REPLACE INTO reminder VALUES (1, ?, NULL)').run(Number(atMs));
      ctx.setAlarm(Number(atMs));
      return atMs;
    },
    fired(ctx: ActorContext) {
      const row = ctx.sql.prepare('SELECT due, at FROM reminder WHERE id = 1').get() as { due: number; at: number | null } | undefined;
      return row ? { at: row.at, due: row.due } : { at: null, due: null };
    },
  },
});

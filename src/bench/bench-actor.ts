/**
 * The actor class `keepwork bench` runs on its own nodes (never a user's class): `arm(at)` sets
 * the alarm; the alarm handler records when it ran by the node's clock, once; `fired()` reads that
 * back (null before it ran); `add(n)` is the call `keepwork bench calls` times (one SQLite write);
 * `destroy()` deletes the actor (how a bench on running nodes removes what it made). The nodes
 * load it by path (BENCH_CLASS_MODULE, printed by `keepwork bench class`), so it is shipped next
 * to the command.
 */
import { defineActor, type ActorContext, type AlarmInfo } from '../workers/define-actor.js';

export default defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE fired (at INTEGER, scheduled INTEGER); CREATE TABLE counter (n INTEGER); INSERT INTO counter VALUES (0)');
  },
  alarm(ctx: ActorContext, info: AlarmInfo) {
    ctx.sql.prepare('INSERT INTO fired VALUES (?, ?)').run(ctx.now(), info.scheduledAt);
  },
  methods: {
    arm(ctx: ActorContext, at: number) {
      ctx.setAlarm(at);
      return at;
    },
    fired: (ctx: ActorContext) =>
      (ctx.sql.prepare('SELECT at, scheduled FROM fired ORDER BY at LIMIT 1').get() as { at: number; scheduled: number } | undefined) ??
      null,
    destroy(ctx: ActorContext) {
      ctx.deleteActor();
    },
    add(ctx: ActorContext, by: number) {
      ctx.sql.prepare('UPDATE counter SET n = n + ?').run(by);
      return (ctx.sql.prepare('SELECT n FROM counter').get() as { n: number }).n;
    },
  },
});

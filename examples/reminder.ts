/**
 * Example actor: a reminder that sets, reschedules and fails alarms, to watch committed retries.
 *
 *   remind(inMs, text)       set the alarm for now + inMs
 *   every(periodMs, text)    a recurring reminder: each firing sets the next point of its schedule
 *   failTimes(n)             the next alarm fails n times before it succeeds (1 s, 2 s, 4 s, ...)
 *   cancel()                 clear the alarm
 *   history()                what fired, when, after how many retries
 */
import { BadRequest, defineActor, type ActorContext, type AlarmInfo } from 'keepwork/actor';

const setting = (ctx: ActorContext, key: string) =>
  (ctx.sql.prepare('SELECT value FROM settings WHERE key = ?').get(key) as { value: string | number } | undefined)?.value;
const set = (ctx: ActorContext, key: string, value: string | number) =>
  ctx.sql.prepare('INSERT INTO settings VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);

export default defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec(`
      CREATE TABLE settings (key TEXT PRIMARY KEY, value);
      CREATE TABLE fired (at INTEGER, scheduled_at INTEGER, retry_count INTEGER, text TEXT);
    `);
  },
  alarm(ctx: ActorContext, info: AlarmInfo) {
    const failTimes = Number(setting(ctx, 'fail_times') ?? 0);
    if (info.retryCount < failTimes) {
      ctx.log.info({ retryCount: info.retryCount }, 'reminder failing on purpose');
      throw new Error(`failing on purpose (${info.retryCount + 1} of ${failTimes})`);
    }
    set(ctx, 'fail_times', 0);
    const text = String(setting(ctx, 'text') ?? '');
    ctx.sql.prepare('INSERT INTO fired VALUES (?, ?, ?, ?)').run(ctx.now(), info.scheduledAt, info.retryCount, text);
    ctx.log.info({ text, retryCount: info.retryCount }, 'reminder fired');
    const period = Number(setting(ctx, 'period_ms') ?? 0);
    if (period > 0) {
      // Recurring: the next point of the series' own schedule after now, counted from when the
      // series was due (kept in state; info.scheduledAt is the retry's time after a failure), so
      // retries, late deliveries and restarts neither drift the period nor fire the missed points.
      const due = Number(setting(ctx, 'due_at'));
      const next = due + (Math.floor((ctx.now() - due) / period) + 1) * period;
      set(ctx, 'due_at', next);
      ctx.setAlarm(next);
    }
  },
  methods: {
    remind(ctx: ActorContext, inMs: unknown, text: unknown = '') {
      if (typeof inMs !== 'number' || !(inMs >= 0)) throw new BadRequest('remind(inMs, text): inMs must be a number >= 0');
      set(ctx, 'text', String(text));
      set(ctx, 'period_ms', 0);
      ctx.setAlarm(ctx.now() + inMs);
      return ctx.getAlarm();
    },
    every(ctx: ActorContext, periodMs: unknown, text: unknown = '') {
      if (typeof periodMs !== 'number' || !(periodMs >= 100)) throw new BadRequest('every(periodMs, text): periodMs must be >= 100');
      set(ctx, 'text', String(text));
      set(ctx, 'period_ms', periodMs);
      set(ctx, 'due_at', ctx.now() + periodMs);
      ctx.setAlarm(ctx.now() + periodMs);
      return ctx.getAlarm();
    },
    failTimes(ctx: ActorContext, n: unknown) {
      if (!Number.isInteger(n) || (n as number) < 0) throw new BadRequest('failTimes(n): n must be an integer >= 0');
      set(ctx, 'fail_times', n as number);
      return n;
    },
    cancel(ctx: ActorContext) {
      set(ctx, 'period_ms', 0);
      ctx.clearAlarm();
      return null;
    },
    alarm: (ctx: ActorContext) => ctx.getAlarm(),
    history(ctx: ActorContext) {
      return ctx.sql.prepare('SELECT at, scheduled_at AS scheduledAt, retry_count AS retryCount, text FROM fired ORDER BY at').all();
    },
  },
});

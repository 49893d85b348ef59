/**
 * bench/peers' Counter and Reminder as Restate virtual objects: an SDK endpoint (HTTP/2) that the
 * Restate server calls. `node restate-service.mjs PORT`; prints "ready PORT" once it listens.
 *
 *   Counter.add(n)        state "n" += n; returns the total
 *   Reminder.set(atMs)    a delayed one-way call to its own fire() at atMs; returns atMs
 *   Reminder.fire(due)    records when it ran (ctx.date.now())
 *   Reminder.fired(_)     { at, due } (at null until it fired)
 */
import './restate-polyfill.mjs';
import * as restate from '@restatedev/restate-sdk';

const counter = restate.object({
  name: 'Counter',
  handlers: {
    add: async (ctx, n) => {
      const total = ((await ctx.get('n')) ?? 0) + n;
      ctx.set('n', total);
      return total;
    },
  },
});

const reminder = restate.object({
  name: 'Reminder',
  handlers: {
    set: async (ctx, atMs) => {
      const now = await ctx.date.now();
      ctx.set('due', atMs);
      ctx.clear('fired');
      ctx.objectSendClient(reminder, ctx.key).fire(atMs, restate.rpc.sendOpts({ delay: Math.max(0, atMs - now) }));
      return atMs;
    },
    fire: async (ctx, due) => {
      ctx.set('fired', await ctx.date.now());
      return due;
    },
    fired: async (ctx) => ({ at: (await ctx.get('fired')) ?? null, due: (await ctx.get('due')) ?? null }),
  },
});

const port = await restate.serve({ services: [counter, reminder], port: Number(process.argv[2] ?? 9080) });
console.log(`ready ${port}`);

/**
 * bench/peers' Counter on keepwork: add(n) on durable state, returns the total (the same actor as
 * the Restate object and the Durable Object in bench/peers/).
 */
import { defineActor, type ActorContext } from '../../../src/actor.js';

export default defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)');
  },
  methods: {
    add(ctx: ActorContext, n: unknown) {
      ctx.sql.prepare('UPDATE counter SET n = n + ?').run(Number(n));
      return (ctx.sql.prepare('SELECT n FROM counter').get() as { n: number }).n;
    },
  },
});

/**
 * Example actor: a counter. Try it (with `npm start` running):
 *
 *   curl -s localhost:8080/v1/actors/demo/Counter/hits/add --json '[5]'    → {"result":5}
 *   curl -s localhost:8080/v1/actors/demo/Counter/hits/get --json '[]'              → {"result":5}
 */
import { BadRequest, defineActor, type ActorContext } from 'keepwork/actor';

export default defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)');
  },
  methods: {
    add(ctx: ActorContext, by: number = 1) {
      // typed for callers (node.actor<typeof Counter>), checked for HTTP, where anything can arrive
      if (typeof by !== 'number' || !Number.isFinite(by)) throw new BadRequest('add(by): by must be a number');
      ctx.sql.prepare('UPDATE counter SET n = n + ?').run(by);
      return (ctx.sql.prepare('SELECT n FROM counter').get() as { n: number }).n;
    },
    get(ctx: ActorContext) {
      return (ctx.sql.prepare('SELECT n FROM counter').get() as { n: number }).n;
    },
  },
});

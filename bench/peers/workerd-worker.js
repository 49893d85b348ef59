/**
 * bench/peers' Counter and Reminder as Durable Objects (SQLite storage) for workerd. The worker
 * routes `POST /<Class>/<name>/<method>` with a JSON array body to the object `idFromName(name)`
 * and answers `{"result": ...}`.
 *
 *   Counter.add(n)        n += n in its SQLite table; returns the total
 *   Reminder.set(atMs)    ctx.storage.setAlarm(atMs); returns atMs
 *   alarm()               records when it ran (Date.now())
 *   Reminder.fired()      { at, due } (at null until it fired)
 */
import { DurableObject } from 'cloudflare:workers';

export class Counter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)');
  }

  add(n) {
    const sql = 'INSERT INTO counter VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET n = n + excluded.n RETURNING n';
    return this.ctx.storage.sql.exec(sql, n).one().n;
  }
}

export class Reminder extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS reminder (id INTEGER PRIMARY KEY, due INTEGER, at INTEGER)');
  }

  async set(atMs) {
    this.ctx.storage.sql.exec('INSERT OR REPLACE INTO reminder VALUES (1, ?, NULL)', atMs);
    await this.ctx.storage.setAlarm(atMs);
    return atMs;
  }

  alarm() {
    this.ctx.storage.sql.exec('UPDATE reminder SET at = ? WHERE id = 1', Date.now());
  }

  fired() {
    const rows = this.ctx.storage.sql.exec('SELECT due, at FROM reminder WHERE id = 1').toArray();
    return rows.length ? { at: rows[0].at, due: rows[0].due } : { at: null, due: null };
  }
}

const NAMESPACES = { Counter: 'COUNTER', Reminder: 'REMINDER' };

export default {
  async fetch(request, env) {
    const [, cls, name, method] = new URL(request.url).pathname.split('/');
    const ns = env[NAMESPACES[cls]];
    if (!ns || !name || !method) return new Response('not found', { status: 404 });
    const args = request.method === 'POST' ? await request.json() : [];
    const stub = ns.get(ns.idFromName(decodeURIComponent(name)));
    return Response.json({ result: await stub[method](...args) });
  },
};

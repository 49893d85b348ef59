/**
 * Builds the `ctx` a handler receives. Alarm calls are recorded in a shadow (`HandlerAlarm`) so
 * that the committed-retry rule can honour them even when the handler throws and its SQL rolls
 * back. Every ctx stops working once its event has ended.
 */
import type { Statement } from 'better-sqlite3';
import type { ActorAddress } from '../core/address.js';
import type { Clock } from '../core/clock.js';
import { BadRequest } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { HandlerAlarm } from '../alarms/retry.js';
import type { Db } from './actor-db.js';
import type { ActorContext, GuestSql, GuestStatement } from './define-actor.js';
import { checkGuestSql } from './sql-guard.js';

export interface GuestRun {
  ctx: ActorContext;
  alarm: HandlerAlarm;
  deleted: boolean;
  /** Ends the ctx: any later use throws. */
  end(): void;
}

const MAX_ALARM_MS = 8_640_000_000_000_000; // the largest Date

export function createGuestRun(
  db: Db,
  address: ActorAddress,
  committedAlarm: number | null,
  clock: Clock,
  log: Logger,
  checkpoint?: () => Promise<void>,
): GuestRun {
  let active = true;
  const live = () => {
    if (!active) throw new Error('this actor context belongs to an event that has ended');
  };
  const run: GuestRun = {
    alarm: { touched: false, at: null },
    deleted: false,
    end: () => void (active = false),
    ctx: {
      sql: guestSql(db, live),
      address,
      log,
      now: () => clock.now(),
      setAlarm(atMs: number) {
        live();
        if (typeof atMs !== 'number' || !Number.isFinite(atMs) || atMs < 0 || atMs > MAX_ALARM_MS) {
          throw new BadRequest(`setAlarm needs a time in ms since the epoch, got ${String(atMs)}`);
        }
        run.alarm = { touched: true, at: Math.round(atMs) };
      },
      getAlarm() {
        live();
        return run.alarm.touched ? run.alarm.at : committedAlarm;
      },
      clearAlarm() {
        live();
        run.alarm = { touched: true, at: null };
      },
      deleteActor() {
        live();
        run.deleted = true;
      },
      async checkpoint() {
        live();
        if (!checkpoint) throw new BadRequest('ctx.checkpoint() works only in a durable call (callDurable, or ?durable=1)');
        await checkpoint();
      },
    },
  };
  return run;
}

function guestSql(db: Db, live: () => void): GuestSql {
  return {
    exec(sql: string) {
      live();
      db.exec(checkGuestSql(sql));
    },
    prepare(sql: string): GuestStatement {
      live();
      const stmt = prepared(db, sql);
      return {
        run: (...p) => (live(), stmt.run(...p)),
        get: (...p) => (live(), stmt.get(...p)),
        all: (...p) => (live(), stmt.all(...p)),
        iterate: (...p) => (live(), stmt.iterate(...p)),
      };
    },
  };
}

/**
 * Guest statements, prepared once per open database and SQL text: a handler that prepares its
 * statement on every call otherwise compiles it (and runs the guard) every time, a large share of a
 * hot actor's worker. Only SQL the guard passed is kept; the most recently used
 * GUEST_STATEMENTS_MAX per database; gone with the handle. A statement busy in an open `iterate` is
 * not shared: the same SQL prepared meanwhile gets a statement of its own.
 */
const GUEST_STATEMENTS_MAX = 64;
const guestStatements = new WeakMap<Db, Map<string, Statement>>();

function prepared(db: Db, sql: string): Statement {
  let cache = guestStatements.get(db);
  if (!cache) guestStatements.set(db, (cache = new Map()));
  const hit = cache.get(sql);
  if (hit?.busy) return db.prepare(sql);
  if (hit) {
    cache.delete(sql); // most recently used last
    cache.set(sql, hit);
    return hit;
  }
  const stmt = db.prepare(checkGuestSql(sql));
  cache.set(sql, stmt);
  if (cache.size > GUEST_STATEMENTS_MAX) cache.delete(cache.keys().next().value!);
  return stmt;
}

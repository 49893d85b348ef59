/**
 * `defineActor`: what an actor class module exports as its default (docs/architecture.md).
 *
 *   export default defineActor({
 *     async init(ctx) { ctx.sql.exec('CREATE TABLE counter(n INTEGER)') },
 *     async alarm(ctx, info) { ... info.scheduledAt, info.retryCount },
 *     methods: { async add(ctx, by: number) { ...; return total } },
 *   })
 *
 * Handlers run in a worker thread, one event at a time per actor, each in one SQLite
 * transaction: committed when the handler returns, rolled back when it throws or runs past
 * `handlerTimeoutMs`. Arguments and results cross threads by structured clone (and HTTP as JSON).
 */
import type { Logger } from '../core/logger.js';
import type { ActorAddress } from '../core/address.js';

export interface GuestStatement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
}

export interface GuestSql {
  exec(sql: string): void;
  prepare(sql: string): GuestStatement;
}

export interface ActorContext {
  /** Synchronous SQL on the actor's own database (internal tables are out of reach). */
  readonly sql: GuestSql;
  readonly address: ActorAddress;
  readonly log: Logger;
  /** The node's clock, in ms. */
  now(): number;
  /** Sets the actor's one alarm (ms since the epoch). Committed with the event. */
  setAlarm(atMs: number): void;
  /** The committed alarm as this event would leave it; during retries, the next attempt's time. */
  getAlarm(): number | null;
  clearAlarm(): void;
  /**
   * Deletes the actor and all its state when the handler returns: nothing the event wrote is kept,
   * and the event ends once a tombstone ends the actor's chain (a throw after it deletes nothing).
   */
  deleteActor(): void;
  /**
   * In a durable call: commits what the handler did so far and waits until it is in the bucket,
   * then goes on in a new transaction (a later throw rolls back only what came after).
   */
  checkpoint(): Promise<void>;
}

export interface AlarmInfo {
  /** The committed alarm time being delivered. */
  scheduledAt: number;
  /** Failures of the alarm handler since it last succeeded (0 on a first attempt). */
  retryCount: number;
}

export type Method = (ctx: ActorContext, ...args: any[]) => unknown;

export interface ActorDefinition {
  init?(ctx: ActorContext): unknown;
  alarm?(ctx: ActorContext, info: AlarmInfo): unknown;
  methods: Record<string, Method>;
}

const DEFINED = Symbol.for('keepwork.actor');

export function defineActor<D extends ActorDefinition>(definition: D): D {
  const problem = checkDefinition(definition);
  if (problem) throw new TypeError(`defineActor: ${problem}`);
  return Object.freeze(Object.assign(Object.create(null), definition, { [DEFINED]: true })) as D;
}

/** Why `value` is not an actor definition, or undefined when it is one. */
export function checkDefinition(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'the definition must be an object';
  const d = value as Partial<ActorDefinition>;
  if (d.init !== undefined && typeof d.init !== 'function') return 'init must be a function';
  if (d.alarm !== undefined && typeof d.alarm !== 'function') return 'alarm must be a function';
  if (typeof d.methods !== 'object' || d.methods === null) return 'methods must be an object of functions';
  for (const [name, fn] of Object.entries(d.methods)) {
    if (typeof fn !== 'function') return `methods.${name} must be a function`;
  }
  return undefined;
}

export function hasMethod(d: ActorDefinition, method: string): boolean {
  return Object.prototype.hasOwnProperty.call(d.methods, method) && typeof d.methods[method] === 'function';
}

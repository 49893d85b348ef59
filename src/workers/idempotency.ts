/**
 * Exactly-once durable calls (docs/guide.md "Idempotent durable calls"). A durable call may carry an
 * idempotency key; the key, a hash of the method and arguments, and the outcome (the result as
 * JSON, or the error's code and message) are recorded in the actor's own database, in
 * `_keep_idem` (actor-db.ts), so the chain carries them with the state: a repeat — on this node or
 * on the node that took the actor over — returns the recorded outcome without running the handler.
 *
 *   lookup:  no row, or one older than idempotencyRetentionMs ─▶ run the handler, record it
 *            the same method and arguments ─▶ the recorded result or error (nothing runs)
 *            others ─▶ IDEMPOTENCY_MISMATCH (nothing runs)
 *   record:  a result in the handler's own transaction; an error the handler raised (only those
 *            a retry would raise again: not a time limit, a lost lease, a failed upload) in a
 *            transaction of its own after the rollback. Every record prunes, in its transaction,
 *            the keys past idempotencyRetentionMs and the oldest past idempotencyKeysMax.
 */
import { createHash } from 'node:crypto';
import type { Settings } from '../core/config.js';
import { BadRequest, ErrorCode, HandlerFailed, IdempotencyMismatch } from '../core/errors.js';
import { hasIdemTable, IDEM_SCHEMA, stmt, type Db } from './actor-db.js';
import type { ErrorData } from './messages.js';

export type IdempotencySettings = Settings<'idempotencyKeysMax' | 'idempotencyRetentionMs'>;

/** What a key is recorded under: the key and the hash of the call it was first used for. */
export interface IdemCall {
  key: string;
  hash: string;
}

export function idemCall(key: string, method: string, args: unknown[]): IdemCall {
  let text: string;
  try {
    text = JSON.stringify([method, args]);
  } catch (e) {
    throw new BadRequest(`the arguments of a call with an idempotency key must be JSON values: ${(e as Error).message}`);
  }
  return { key, hash: createHash('sha256').update(text, 'utf8').digest('hex') };
}

export type Recorded = { type: 'result'; result: unknown } | { type: 'error'; error: ErrorData };

/** The recorded outcome of `call.key`; null when the key is new (or expired). */
export function lookupCall(db: Db, call: IdemCall, nowMs: number, s: IdempotencySettings): Recorded | null {
  if (!hasIdemTable(db)) return null;
  const row = stmt(db, 'SELECT args_hash, result, error, at FROM _keep_idem WHERE key = ?').get(call.key) as
    { args_hash: string; result: string | null; error: string | null; at: number } | undefined;
  if (!row || row.at < nowMs - s.idempotencyRetentionMs) return null;
  if (row.args_hash !== call.hash)
    throw new IdempotencyMismatch(
      `idempotency key ${JSON.stringify(call.key)} was used for another method or other arguments; nothing ran (use a new key for a new call)`,
    );
  if (row.error !== null) return { type: 'error', error: JSON.parse(row.error) as ErrorData };
  return { type: 'result', result: row.result === null ? undefined : JSON.parse(row.result) };
}

/** Records a result; inside the handler's transaction, before it commits. */
export function recordResult(db: Db, call: IdemCall, result: unknown, nowMs: number, s: IdempotencySettings): void {
  let json: string | null;
  try {
    json = result === undefined ? null : (JSON.stringify(result) ?? null);
  } catch (e) {
    throw new HandlerFailed(`a call with an idempotency key must return a JSON value: ${(e as Error).message}`);
  }
  record(db, call, json, null, nowMs, s);
}

/** Records an error; inside a transaction of its own. */
export function recordError(db: Db, call: IdemCall, error: ErrorData, nowMs: number, s: IdempotencySettings): void {
  record(db, call, null, JSON.stringify({ code: error.code, message: error.message }), nowMs, s);
}

/** Errors a retry of the same call would raise again: the handler's own (or its input's). */
const RECORDED_CODES: ReadonlySet<string> = new Set([
  ErrorCode.HandlerFailed,
  ErrorCode.BadRequest,
  ErrorCode.NotFound,
  ErrorCode.SqlRefused,
]);

export function recordable(error: ErrorData): boolean {
  return RECORDED_CODES.has(error.code);
}

function record(db: Db, call: IdemCall, result: string | null, error: string | null, nowMs: number, s: IdempotencySettings): void {
  db.exec(IDEM_SCHEMA);
  stmt(
    db,
    `INSERT INTO _keep_idem (key, args_hash, result, error, at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT(key) DO UPDATE SET args_hash = excluded.args_hash, result = excluded.result, error = excluded.error, at = excluded.at`,
  ).run(call.key, call.hash, result, error, nowMs);
  prune(db, nowMs, s);
}

/** Keys past the retention age, then the oldest past the count. */
export function prune(db: Db, nowMs: number, s: IdempotencySettings): number {
  if (!hasIdemTable(db)) return 0;
  let n = stmt(db, 'DELETE FROM _keep_idem WHERE at < ?').run(nowMs - s.idempotencyRetentionMs).changes;
  const { count } = stmt(db, 'SELECT count(*) AS count FROM _keep_idem').get() as { count: number };
  if (count > s.idempotencyKeysMax)
    n += stmt(db, 'DELETE FROM _keep_idem WHERE rowid IN (SELECT rowid FROM _keep_idem ORDER BY at, rowid LIMIT ?)').run(
      count - s.idempotencyKeysMax,
    ).changes;
  return n;
}

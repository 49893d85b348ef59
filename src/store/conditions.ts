/**
 * The conditional-write rules the folder and SQLite buckets share: a put's condition as a mode
 * (checked before any I/O), and the PreconditionFailed each failed condition answers.
 */
import { BadRequest, PreconditionFailed } from '../core/errors.js';
import type { PutCondition } from './types.js';

export type Mode = { kind: 'create' } | { kind: 'match'; etag: string } | { kind: 'any' };

export function modeOf(condition: PutCondition | undefined): Mode {
  const c = (condition ?? {}) as { ifNoneMatch?: unknown; ifMatch?: unknown };
  if (c.ifNoneMatch !== undefined && c.ifMatch !== undefined) throw new BadRequest('put takes ifNoneMatch or ifMatch, not both');
  if (c.ifNoneMatch !== undefined) {
    if (c.ifNoneMatch !== '*') throw new BadRequest(`ifNoneMatch must be "*", got ${JSON.stringify(c.ifNoneMatch)}`);
    return { kind: 'create' };
  }
  if (c.ifMatch !== undefined) {
    if (typeof c.ifMatch !== 'string' || c.ifMatch === '') throw new BadRequest('ifMatch must be a non-empty etag string');
    return { kind: 'match', etag: c.ifMatch };
  }
  return { kind: 'any' };
}

/** A create (`ifNoneMatch: '*'`) that found the object. */
export function createFailed(key: string): InstanceType<typeof PreconditionFailed> {
  return new PreconditionFailed(`put ${key} with ifNoneMatch "*": the object exists`, { details: { key } });
}

/** An ifMatch whose etag is not the object's (`current`; null: there is none). */
export function mismatch(key: string, expected: string, current: string | null): InstanceType<typeof PreconditionFailed> {
  const now = current === null ? 'the object does not exist' : `its etag is ${current}`;
  return new PreconditionFailed(`put ${key} with ifMatch ${expected}: ${now}`, { details: { key, expected, current } });
}

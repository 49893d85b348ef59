/**
 * Rules every store applies to object keys and listings, so that memory, fs and S3 refuse and
 * order exactly the same things.
 *
 * A valid key: 1..1024 bytes of well-formed UTF-8; `/`-separated segments, none empty, none `.`
 * or `..`; no leading `/`; no NUL or other control character. Example:
 * `alarms/t1/000001700000000/Counter.t/6a6f65/00000000000000000001-9f3a`.
 *
 * Byte order: S3 lists keys in UTF-8 byte order. JavaScript compares strings by UTF-16 code unit,
 * which differs for characters above U+FFFF; `compareKeys` compares by code point, which is the
 * same as UTF-8 byte order.
 */
import { BadKey, BadRequest } from '../core/errors.js';
import { LIST_ASK_MAX, LIST_MAX_KEYS, type ListOptions, type ListPage, type ObjectStore } from './types.js';

export const KEY_MAX_BYTES = 1024;

export function validateKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) throw new BadKey(`object key must be a non-empty string, got ${JSON.stringify(key)}`);
  if (!key.isWellFormed()) throw new BadKey(`object key ${JSON.stringify(key)} is not well-formed UTF-8 (lone surrogate)`);
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes > KEY_MAX_BYTES) throw new BadKey(`object key is ${bytes} bytes; the limit is ${KEY_MAX_BYTES}`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(key)) throw new BadKey(`object key ${JSON.stringify(key)} contains a control character or NUL`);
  if (key.startsWith('/')) throw new BadKey(`object key ${JSON.stringify(key)} starts with "/"`);
  for (const segment of key.split('/')) {
    if (segment === '') throw new BadKey(`object key ${JSON.stringify(key)} has an empty segment`);
    if (segment === '.' || segment === '..') throw new BadKey(`object key ${JSON.stringify(key)} has a "${segment}" segment`);
  }
  return key;
}

/** Validates a listing prefix: like a key, but may be empty and may end with "/". */
export function validatePrefix(prefix: string | undefined): string {
  if (prefix === undefined || prefix === '') return '';
  validateKey(prefix.endsWith('/') ? prefix + 'x' : prefix);
  return prefix;
}

/** UTF-8 byte order (= code point order). Negative, zero or positive like `localeCompare`. */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Below the surrogate range, or both surrogates: code unit order equals code point order.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs === ys) return x - y;
    // A surrogate (code point >= U+10000) sorts after any BMP character.
    return xs ? 1 : -1;
  }
  return a.length - b.length;
}

export interface ResolvedList {
  prefix: string;
  /** Keys must be strictly greater than this ('' for none). */
  after: string;
  maxKeys: number;
}

/** Validates list options and folds `startAfter` and `continuation` into one lower bound. */
export function resolveList(options: ListOptions = {}): ResolvedList {
  const prefix = validatePrefix(options.prefix);
  const maxKeys = options.maxKeys ?? LIST_MAX_KEYS;
  if (!Number.isInteger(maxKeys) || maxKeys < 1 || maxKeys > LIST_ASK_MAX) {
    throw new BadRequest(`maxKeys must be an integer from 1 to ${LIST_ASK_MAX}, got ${maxKeys}`);
  }
  let after = options.startAfter ?? '';
  if (options.continuation !== undefined) {
    const from = decodeContinuation(options.continuation);
    if (compareKeys(from, after) > 0) after = from;
  }
  return { prefix, after, maxKeys };
}

/** Continuation tokens of the local stores: the last key returned, base64url-encoded. */
function encodeContinuation(lastKey: string): string {
  return Buffer.from(lastKey, 'utf8').toString('base64url');
}

function decodeContinuation(token: string): string {
  if (typeof token !== 'string' || !/^[A-Za-z0-9_-]+$/.test(token)) throw new BadRequest(`malformed continuation token`);
  return Buffer.from(token, 'base64url').toString('utf8');
}

/** Builds a page from keys already filtered and sorted, fetched up to `maxKeys + 1`. */
export function pageOf(sorted: string[], maxKeys: number): ListPage {
  if (sorted.length <= maxKeys) return { keys: sorted };
  const keys = sorted.slice(0, maxKeys);
  return { keys, continuation: encodeContinuation(keys[keys.length - 1]!) };
}

/** Every key under `prefix` after `startAfter`, page by page (bounded by `pageKeys` per request). */
export async function* listAll(
  store: ObjectStore,
  options: Omit<ListOptions, 'continuation' | 'maxKeys'> & { pageKeys?: number } = {},
): AsyncGenerator<string> {
  let continuation: string | undefined;
  do {
    const page = await store.list({ prefix: options.prefix, startAfter: options.startAfter, maxKeys: options.pageKeys, continuation });
    yield* page.keys;
    continuation = page.continuation;
  } while (continuation !== undefined);
}

/**
 * FsStore's on-disk names: key ⇄ path encoding and long-segment splitting. The only module that
 * builds or parses FsStore paths.
 *
 * Each key segment is percent-encoded byte by byte (every UTF-8 byte outside [A-Za-z0-9._-] becomes
 * %XX, `%` and `~` included). A folder is an encoded segment; an object file is its encoded last
 * segment + `~`. A segment whose encoding exceeds PIECE_CHARS_MAX is cut between characters into
 * pieces, every piece but the last a folder named piece + `+`. A segment of exactly
 * DIGIT_SEGMENT_CHARS ASCII digits (the alarm index's due time, docs/alarm-index.md) is cut the
 * same way at DIGIT_CUTS (6 + 3 + 3 + 3 digits), so below the head no folder holds more than 1,000
 * of them and a listing reads only the folders its keys are in (on-disk format 2, fs/format.ts).
 * Names starting with `~` are the store's own: `~lock.db` (the host lock), `~tmp/` (temp files) and
 * `~format`. None of `~`, `+` can occur in an encoded segment, so objects, folders, continuation
 * folders and internal files never collide, and `a` can be both an object and a folder:
 *
 *   <root>/~lock.db                          SQLite file with one empty table: only its lock is used
 *   <root>/~tmp/<pid>-<hex>                  temp files (an orphan is left by a killed writer)
 *   <root>/holds/t1/Counter/6a6f65~          key holds/t1/Counter/6a6f65
 *   <root>/a~  <root>/a/b~                   keys a and a/b
 *   <root>/x/caf%C3%A9%20bar~                key x/café bar
 *   <root>/n/<240 chars>+/<rest>~            key n/<a segment of more than 240 encoded chars>
 *   <root>/alarms/t/001796+/115+/600+/000/…  keys alarms/t/001796115600000/…
 *
 * Errors: `BadRequest` when a path would leave the bucket (`insideRoot`).
 */
import * as path from 'node:path';
import { BadRequest } from '../../core/errors.js';

/** Internal names start with this; no encoded segment does. */
export const INTERNAL_MARK = '~';
export const LOCK_FILE_NAME = '~lock.db';
export const TEMP_DIR_NAME = '~tmp';
export const OBJECT_MARK = '~';
export const CONTINUED_MARK = '+';
/** Longest piece name (NAME_MAX is 255 bytes; a mark is added). */
export const PIECE_CHARS_MAX = 240;
/** A segment of exactly this many ASCII digits is stored cut at DIGIT_CUTS. */
export const DIGIT_SEGMENT_CHARS = 15;
/**
 * Where such a segment is cut. For a due time in ms: the head (units of 10^9 ms, 11.6 days) grows
 * one name per 11.6 days of spread; each group below it has at most 1,000 names.
 */
const DIGIT_CUTS: readonly number[] = [6, 9, 12];
const DIGIT_FROM: readonly number[] = [0, ...DIGIT_CUTS];
const DIGIT_SEGMENT = new RegExp(`^[0-9]{${DIGIT_SEGMENT_CHARS}}$`);
const ENCODED_NAME = /^(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+$/;
const PLAIN_NAME = /^[A-Za-z0-9._-]+$/;

/** Where an object lives: its file and the folder holding it. */
export interface Target {
  file: string;
  dir: string;
}

function isPlainByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x2e || b === 0x5f || b === 0x2d;
}

export function encodeSegment(text: string): string {
  if (PLAIN_NAME.test(text)) return text; // nothing to escape (the common case: every byte is its own character)
  let out = '';
  for (const b of Buffer.from(text, 'utf8'))
    out += isPlainByte(b) ? String.fromCharCode(b) : `%${b < 16 ? '0' : ''}${b.toString(16).toUpperCase()}`;
  return out;
}

/** The text of an encoded name, or null for a name this store never writes. */
export function decodeSegment(name: string): string | null {
  if (PLAIN_NAME.test(name)) return name; // nothing escaped: its own text (the common case, and a listing's cost)
  if (!ENCODED_NAME.test(name)) return null;
  const bytes = Buffer.from(
    name.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    'latin1',
  );
  const text = bytes.toString('utf8');
  return encodeSegment(text) === name ? text : null; // refuses bad UTF-8 and non-canonical escapes
}

/** A segment's encoding cut between characters into names of at most PIECE_CHARS_MAX chars. */
function piecesOf(segment: string): string[] {
  if (DIGIT_SEGMENT.test(segment)) return DIGIT_FROM.map((from, i) => segment.slice(from, DIGIT_CUTS[i]));
  const whole = encodeSegment(segment);
  if (whole.length <= PIECE_CHARS_MAX) return [whole];
  const pieces: string[] = [];
  let current = '';
  for (const ch of segment) {
    const encoded = encodeSegment(ch);
    if (current.length + encoded.length > PIECE_CHARS_MAX) (pieces.push(current), (current = ''));
    current += encoded;
  }
  pieces.push(current);
  return pieces;
}

/** Path components of a folder segment (continuation pieces, then the folder). */
export function folderNames(segment: string): string[] {
  const pieces = piecesOf(segment);
  return pieces.map((p, i) => (i < pieces.length - 1 ? p + CONTINUED_MARK : p));
}

/** Path components of a validated key's object file, relative to the root. */
export function objectNames(key: string): string[] {
  const segments = key.split('/');
  const names: string[] = [];
  for (const segment of segments) names.push(...folderNames(segment));
  names[names.length - 1] += OBJECT_MARK;
  return names;
}

/** A root `path.resolve` leaves as it is (absolute, normalized), remembered: most stores ask about one root. */
let resolvedRoot: string | undefined;

/**
 * The path of `names` below `root`; BadRequest if it would leave it. Names that are neither empty
 * nor `.` nor `..` (no name holds a separator: `/` is encoded) are joined as they are, which is
 * what `path.resolve` would make of them, without its parsing of every component.
 */
export function insideRoot(root: string, names: readonly string[]): string {
  if (resolvedRoot !== root && path.resolve(root) === root && !root.endsWith(path.sep)) resolvedRoot = root;
  if (resolvedRoot === root && names.length > 0 && names.every(joinable)) return root + path.sep + names.join(path.sep);
  const full = path.resolve(root, ...names);
  if (!full.startsWith(root + path.sep)) throw new BadRequest(`path ${full} escapes the bucket ${root}`);
  return full;
}

function joinable(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes(path.sep);
}

/**
 * Converts a folder bucket from on-disk format 1 to the current one (fs/format.ts): every
 * 15-digit segment stored as one name (`001796115600000/`, `…/001796115600000~`) is moved to its
 * cut path (`001796+/115+/600+/000/`), a whole folder per rename, then the folder is stamped.
 *
 * Run it offline: with every node stopped (an older node would keep writing format 1). It is
 * idempotent and safe to re-run after a crash: each rename is atomic, the stamp is written last,
 * and a folder whose target already exists (a crashed run) has its names moved one by one.
 * Two objects for the same key (only a mix of old and new writers could make them) stop it with
 * CorruptState naming both, before anything of that object is moved. A folder that is not an
 * older bucket — empty, or holding anything but a keepwork bucket's top-level folders
 * (fs/format.ts `folderShape`) — is refused with BadRequest naming what it holds, and left as it is.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BadRequest, CorruptState } from '../../core/errors.js';
import { codeOf } from './io.js';
import { folderShape, notABucket, writeFormat, FS_FORMAT } from './format.js';
import { CONTINUED_MARK, DIGIT_SEGMENT_CHARS, INTERNAL_MARK, OBJECT_MARK, TEMP_DIR_NAME, folderNames } from './paths.js';

export interface MigrateResult {
  /** The format the folder was in (1 when unstamped). */
  from: number;
  /** Folders and objects moved to their new path. */
  moved: number;
}

const WHOLE_DIGITS = new RegExp(`^[0-9]{${DIGIT_SEGMENT_CHARS}}$`);

export function migrateFsBucket(root: string): MigrateResult {
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) throw new BadRequest(`no folder bucket at ${root}`);
  const shape = folderShape(root);
  if (shape.kind === 'stamped' && shape.format === FS_FORMAT) return { from: shape.format, moved: 0 };
  if (shape.kind === 'stamped') throw new BadRequest(`${root} is in on-disk format ${shape.format}; this keepwork converts format 1 only`);
  if (shape.kind === 'foreign') throw new BadRequest(`${notABucket(root, shape.found)}; nothing was changed`);
  if (shape.kind === 'empty')
    throw new BadRequest(`${root} is empty: no older bucket to convert (a node stamps a new bucket itself); nothing was changed`);
  const touched = new Set<string>();
  const moved = walk(root, false, touched);
  for (const dir of touched) fsyncDir(dir);
  writeFormat(root, path.join(root, TEMP_DIR_NAME));
  return { from: 1, moved };
}

/** `inPiece`: `dir` is a continuation folder, so its names continue a segment (never whole ones). */
function walk(dir: string, inPiece: boolean, touched: Set<string>): number {
  let moved = 0;
  for (const d of fs.readdirSync(dir, { withFileTypes: true })) {
    if (d.name.startsWith(INTERNAL_MARK)) continue;
    const from = path.join(dir, d.name);
    if (d.isDirectory() && d.name.endsWith(CONTINUED_MARK)) {
      moved += walk(from, true, touched);
      continue;
    }
    const object = d.isFile() && d.name.endsWith(OBJECT_MARK);
    const stem = object ? d.name.slice(0, -1) : d.name;
    if (!inPiece && (object || d.isDirectory()) && WHOLE_DIGITS.test(stem)) {
      const names = folderNames(stem);
      if (object) names[names.length - 1] += OBJECT_MARK;
      const to = path.join(dir, ...names);
      moved += move(from, to, object, touched);
      if (!object) moved += walk(to, false, touched);
    } else if (d.isDirectory()) moved += walk(from, false, touched);
  }
  return moved;
}

/** Moves an object file or a folder to `to`, merging into a folder already there. */
function move(from: string, to: string, object: boolean, touched: Set<string>): number {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  touched.add(path.dirname(from)).add(path.dirname(to));
  if (object) {
    try {
      fs.linkSync(from, to); // never replaces: two objects for one key are refused below
    } catch (e) {
      if (codeOf(e) === 'EEXIST') throw new CorruptState(`two objects for one key: ${from} and ${to}; keep one by hand and re-run`);
      throw e;
    }
    fs.unlinkSync(from);
    return 1;
  }
  try {
    fs.renameSync(from, to); // fails if `to` is a non-empty folder
    return 1;
  } catch (e) {
    if (codeOf(e) !== 'ENOTEMPTY' && codeOf(e) !== 'EEXIST') throw e;
  }
  let moved = 0;
  for (const d of fs.readdirSync(from, { withFileTypes: true })) {
    moved += move(path.join(from, d.name), path.join(to, d.name), d.isFile(), touched);
  }
  fs.rmdirSync(from);
  return moved;
}

function fsyncDir(dir: string): void {
  let fd: number;
  try {
    fd = fs.openSync(dir, 'r');
  } catch (e) {
    if (codeOf(e) === 'ENOENT') return; // a folder emptied by a merge and removed
    throw e;
  }
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

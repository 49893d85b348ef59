/**
 * FsStore's on-disk format: the `~format` file at the root says which layout (fs/paths.ts) the
 * folder holds, and a store refuses to open a folder of another layout — a key stored under the
 * old layout would otherwise be missing from get, put and delete while still listed.
 *
 *   format 1   (no `~format` file) every segment one folder; due times `001796115600000/`
 *   format 2   a 15-digit segment cut into nested folders `001796+/115+/600+/000/`
 *
 * A new folder (no names but the store's own `~…`) is stamped with the current format before any
 * object is written. A folder of format 1 is refused with BadConfig naming the command that
 * converts it (`keepwork bucket migrate`, fs/migrate.ts); a folder holding anything else is refused
 * as not a bucket, never steered to the migration. A store opened read-only (the CLI's looks)
 * checks without stamping: an empty folder is no bucket to it (`checkFormatReadOnly`). The check reads the names first and the
 * format file after: a writer of this format stamps the folder before its first object, so an
 * object seen without a stamp read after it was written by format 1. Processes that open a new
 * folder at once all stamp it: the stamp is an exclusive create (a link), so one wins and the
 * others read the same format back (test/store/first-open.test.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { BadConfig } from '../../core/errors.js';
import { codeOf } from './io.js';
import { INTERNAL_MARK } from './paths.js';

export const FORMAT_FILE_NAME = '~format';
export const FS_FORMAT = 2;
const FORMAT_TEXT = `keepwork folder bucket, on-disk format ${FS_FORMAT}\n`;

/** The command that converts a format-1 folder (printed in errors). */
function migrateCommand(root: string): string {
  return `keepwork bucket migrate --bucket ${JSON.stringify(root)}`;
}

/** The format the folder says it holds; null when it has no format file. */
export function readFormat(root: string): number | null {
  let text: string;
  try {
    text = fs.readFileSync(path.join(root, FORMAT_FILE_NAME), 'utf8');
  } catch (e) {
    if (codeOf(e) === 'ENOENT') return null;
    throw e;
  }
  const m = /on-disk format (\d+)/.exec(text);
  if (!m) throw new BadConfig(`${root}: ${FORMAT_FILE_NAME} does not name an on-disk format (${JSON.stringify(text.slice(0, 80))})`);
  return Number(m[1]);
}

/**
 * The top-level folders a keepwork bucket's keys start with (leases/records.ts, replication/
 * state-keys.ts, alarms/keys.ts; test/store/fs-format.test.ts checks they agree): an unstamped
 * folder that holds only these (and the store's own `~…` names) is a format-1 bucket.
 */
export const BUCKET_TOP_FOLDERS: readonly string[] = ['alarms', 'holds', 'nodes', 'state'];

/** Names listed in an error about what a folder holds, at most. */
const FOUND_NAMES_MAX = 5;

/**
 * What a folder holds, read without writing anything: `stamped` (a `~format` file, of that
 * format), `empty` (nothing but the store's own `~…` names), `format1` (an older keepwork bucket:
 * only BUCKET_TOP_FOLDERS), or `foreign` (anything else; `found` names a few of its entries, a
 * folder with a trailing `/`).
 */
export type FolderShape =
  { kind: 'stamped'; format: number } | { kind: 'empty' } | { kind: 'format1' } | { kind: 'foreign'; found: string };

export function folderShape(root: string): FolderShape {
  const entries = fs.readdirSync(root, { withFileTypes: true }).filter((d) => !d.name.startsWith(INTERNAL_MARK));
  const format = readFormat(root); // after the names: see the file comment
  if (format !== null) return { kind: 'stamped', format };
  if (entries.length === 0) return { kind: 'empty' };
  const foreign = entries.filter((d) => !(d.isDirectory() && BUCKET_TOP_FOLDERS.includes(d.name)));
  if (foreign.length === 0) return { kind: 'format1' };
  const names = foreign
    .map((d) => (d.isDirectory() ? `${d.name}/` : d.name))
    .sort()
    .slice(0, FOUND_NAMES_MAX);
  const more = foreign.length > FOUND_NAMES_MAX ? ` and ${foreign.length - FOUND_NAMES_MAX} more` : '';
  return { kind: 'foreign', found: names.map((n) => JSON.stringify(n)).join(', ') + more };
}

/** Why a folder that is not a keepwork bucket is refused: what it holds. */
export function notABucket(root: string, found: string): string {
  const tops = BUCKET_TOP_FOLDERS.map((n) => `${n}/`).join(', ');
  return `${root} is not a keepwork bucket: it holds ${found} (a bucket holds only ${tops} and names starting with ${INTERNAL_MARK}); check --bucket`;
}

/** Stamps or checks the folder (see the file comment); throws BadConfig for another format or a folder of other files. */
export function checkFormat(root: string, tempDir: string): void {
  const shape = folderShape(root);
  if (shape.kind === 'empty') return writeFormat(root, tempDir);
  refuseUnlessCurrent(root, shape);
}

/**
 * Checks the folder for a store opened read-only, writing nothing: it must be a bucket of this
 * format already. BadConfig otherwise, saying what the folder is (empty, an older bucket, other files).
 */
export function checkFormatReadOnly(root: string): void {
  const shape = folderShape(root);
  if (shape.kind === 'empty') throw new BadConfig(`no keepwork bucket at ${root}: the folder is empty; check --bucket`);
  refuseUnlessCurrent(root, shape);
}

function refuseUnlessCurrent(root: string, shape: Exclude<FolderShape, { kind: 'empty' }>): void {
  if (shape.kind === 'stamped' && shape.format === FS_FORMAT) return;
  if (shape.kind === 'stamped')
    throw new BadConfig(`folder bucket ${root} is in on-disk format ${shape.format}; this keepwork reads format ${FS_FORMAT} only`);
  if (shape.kind === 'foreign') throw new BadConfig(notABucket(root, shape.found));
  throw new BadConfig(
    `folder bucket ${root} was written by an older keepwork (on-disk format 1, no ${FORMAT_FILE_NAME}); ` +
      `stop every node using it and run \`${migrateCommand(root)}\` once to convert it to format ${FS_FORMAT}`,
  );
}

/** Writes the format file (an exclusive create: a racing stamp of the same format is fine). */
export function writeFormat(root: string, tempDir: string): void {
  fs.mkdirSync(tempDir, { recursive: true });
  const temp = path.join(tempDir, `${process.pid}-${randomBytes(8).toString('hex')}`);
  fs.writeFileSync(temp, FORMAT_TEXT);
  try {
    const fd = fs.openSync(temp, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.linkSync(temp, path.join(root, FORMAT_FILE_NAME));
    const dir = fs.openSync(root, 'r');
    fs.fsyncSync(dir);
    fs.closeSync(dir);
  } catch (e) {
    if (codeOf(e) !== 'EEXIST') throw e;
    const format = readFormat(root);
    if (format !== FS_FORMAT) throw new BadConfig(`folder bucket ${root} was stamped with on-disk format ${format} meanwhile`);
  } finally {
    fs.rmSync(temp, { force: true });
  }
}

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
 * converts it (`keepwork bucket migrate`, fs/migrate.ts). The check reads the names first and the
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

/** Stamps or checks the folder (see the file comment); throws BadConfig for another format. */
export function checkFormat(root: string, tempDir: string): void {
  const used = fs.readdirSync(root).some((name) => !name.startsWith(INTERNAL_MARK));
  const format = readFormat(root);
  if (format === FS_FORMAT) return;
  if (format !== null)
    throw new BadConfig(`folder bucket ${root} is in on-disk format ${format}; this keepwork reads format ${FS_FORMAT} only`);
  if (used)
    throw new BadConfig(
      `folder bucket ${root} was written by an older keepwork (on-disk format 1, no ${FORMAT_FILE_NAME}); ` +
        `stop every node using it and run \`${migrateCommand(root)}\` once to convert it to format ${FS_FORMAT}`,
    );
  writeFormat(root, tempDir);
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

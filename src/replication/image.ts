/**
 * The committed image of an actor's database, read from its files: the main file (the state at
 * the last checkpoint — with autocheckpoint off nothing else writes it) with every committed WAL
 * frame since applied. Unlike `db.serialize()` it is right even while the actor's next event
 * holds a write transaction open, so a snapshot never has to wait for a quiet moment. A main
 * file too short for a header (and no WAL frames) is a `CorruptState`: the actor is not served.
 * `wal`: the WAL's commits from its start (a capture with no cursor, or a capture's `fromStart`)
 * just before, if the caller has them.
 */
import { readFileSync } from 'node:fs';
import { CorruptState } from '../core/errors.js';
import { captureWal, type WalCapture, type WalCursor } from './wal.js';

export interface CommittedImage {
  image: Uint8Array;
  pageSize: number;
  /** Where the image ends in the WAL (null: the WAL had no committed frames). */
  cursor: WalCursor | null;
}

export function committedImage(
  dbPath: string,
  wal: Pick<WalCapture, 'delta' | 'cursor'> = captureWal(`${dbPath}-wal`, null),
): CommittedImage {
  const main = readFileSync(dbPath);
  const { delta, cursor } = wal;
  const pageSize = delta?.pageSize ?? pageSizeOf(main);
  if (!delta) return { image: main, pageSize, cursor };
  const image = Buffer.alloc(delta.pageCountAfter * pageSize);
  main.copy(image, 0, 0, Math.min(main.length, image.length));
  for (const { pgno, data } of delta.pages) {
    if (pgno <= delta.pageCountAfter) image.set(data, (pgno - 1) * pageSize);
  }
  return { image, pageSize, cursor };
}

function pageSizeOf(main: Buffer): number {
  if (main.length < 100) throw new CorruptState(`database file is ${main.length} bytes, too short to hold a SQLite header (100 bytes)`);
  const raw = main.readUInt16BE(16);
  return raw === 1 ? 65536 : raw;
}

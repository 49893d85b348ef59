/**
 * Every decode failure of the replication formats carries its code, so that a caller can tell
 * damaged data from its handler's own failure (HANDLER_FAILED): what comes from the bucket (a
 * link, a delta, the pages it writes) is CORRUPT_LINK; what comes from the actor's own files (its
 * WAL cursor, a database file too short) is CORRUPT_STATE; a delta this node built wrong is
 * INTERNAL.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { committedImage } from '../../src/replication/image.js';
import { decodeLink, encodeLink } from '../../src/replication/link.js';
import { applyDelta, decodeDelta, encodeDelta } from '../../src/replication/pages.js';
import { captureWal } from '../../src/replication/wal.js';
import { tempDirs } from '../helpers/temp.js';

const dir = tempDirs('kw-decode-');
const coded = (code: ErrorCode, message: RegExp) => (e: unknown) => isKeepworkError(e, code) && message.test(e.message);

describe('decode errors carry codes', () => {
  it('a delta payload that is not one: CORRUPT_LINK', () => {
    const good = encodeDelta({ pageSize: 512, pageCountAfter: 2, pages: [{ pgno: 1, data: new Uint8Array(512) }] });
    assert.throws(() => decodeDelta(new TextEncoder().encode('this is certainly not a page delta')), coded(ErrorCode.CorruptLink, /magic/));
    assert.throws(() => decodeDelta(good.subarray(0, 10)), coded(ErrorCode.CorruptLink, /shorter than its 20-byte header/));
    assert.throws(() => decodeDelta(good.subarray(0, good.length - 1)), coded(ErrorCode.CorruptLink, /need exactly/));
    const badPgno = new Uint8Array(good);
    new DataView(badPgno.buffer).setUint32(20, 7); // page 7 of a 2-page database
    assert.throws(() => decodeDelta(badPgno), coded(ErrorCode.CorruptLink, /pgno 7/));
  });

  it('a delta that does not fit the file it is applied to: CORRUPT_LINK', () => {
    const path = join(dir(), 'apply.db');
    writeFileSync(path, new Uint8Array(1024));
    assert.throws(() => applyDelta(path, { pageSize: 1024, pageCountAfter: 1, pages: [] }), coded(ErrorCode.CorruptLink, /not a SQLite/));
    const header = new Uint8Array(1024);
    header.set(new TextEncoder().encode('SQLite format 3\0'));
    header[16] = 4; // 1024
    writeFileSync(path, header);
    assert.throws(() => applyDelta(path, { pageSize: 4096, pageCountAfter: 1, pages: [] }), coded(ErrorCode.CorruptLink, /page size 1024/));
  });

  it('a delta this node would encode wrong: INTERNAL', () => {
    const page = (pgno: number) => ({ pgno, data: new Uint8Array(512) });
    assert.throws(
      () => encodeDelta({ pageSize: 512, pageCountAfter: 5, pages: [page(3), page(1)] }),
      coded(ErrorCode.Internal, /increase strictly/),
    );
  });

  it('a damaged link: CORRUPT_LINK', () => {
    const fields = { seq: 2, kind: 'delta' as const, generation: 1, nodeId: 'n', epoch: 1, atMs: 0, pageSize: 512, pageCount: 1 };
    const body = encodeLink(fields, new Uint8Array(8));
    body[body.length - 40]! ^= 1;
    assert.throws(() => decodeLink(body, 2), coded(ErrorCode.CorruptLink, /checksum/));
    assert.throws(() => decodeLink(encodeLink(fields, new Uint8Array(8)), 3), coded(ErrorCode.CorruptLink, /expected 3/));
  });

  it('a link whose header names another payload size: CORRUPT_LINK, and no bigger buffer than it names', () => {
    const payload = new Uint8Array(5000).fill(7);
    const fields = { seq: 1, kind: 'snapshot' as const, generation: 1, nodeId: 'n', epoch: 1, atMs: 0, pageSize: 1000, pageCount: 5 };
    // Sealed as a writer that lied about `size` would seal it: every checksum matches.
    const lying = (size: number) => {
      const good = Buffer.from(encodeLink(fields, payload));
      const len = good.readUInt32BE(4);
      const header = { ...(JSON.parse(good.subarray(8, 8 + len).toString('utf8')) as object), size };
      const json = Buffer.from(JSON.stringify(header));
      const lenBytes = Buffer.alloc(4);
      lenBytes.writeUInt32BE(json.length);
      const unsealed = Buffer.concat([good.subarray(0, 4), lenBytes, json, good.subarray(8 + len, good.length - 32)]);
      return Buffer.concat([unsealed, createHash('sha256').update(unsealed).digest()]);
    };
    assert.equal(decodeLink(encodeLink(fields, payload), 1).payload.length, 5000);
    assert.throws(() => decodeLink(lying(100), 1), coded(ErrorCode.CorruptLink, /inflates past the 100 bytes its header names/));
    assert.throws(() => decodeLink(lying(9000), 1), coded(ErrorCode.CorruptLink, /payload checksum mismatch/));
  });

  it('a WAL cursor off its frame boundary (a damaged sidecar): CORRUPT_STATE', () => {
    const path = join(dir(), 'a.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    const { cursor } = captureWal(`${path}-wal`, null);
    assert.ok(cursor);
    assert.throws(
      () => captureWal(`${path}-wal`, { ...cursor, offset: cursor.offset - 1 }),
      coded(ErrorCode.CorruptState, /frame boundary/),
    );
    db.close();
  });

  it('a database file too short for its header: CORRUPT_STATE', () => {
    const path = join(dir(), 'short.db');
    writeFileSync(path, new Uint8Array(50));
    assert.throws(() => committedImage(path), coded(ErrorCode.CorruptState, /too short/));
  });
});

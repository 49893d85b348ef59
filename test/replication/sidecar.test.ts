/**
 * The sidecar file (replication/sidecar.ts): rewritten in place, padded, never a second file for
 * the usual small record, and whatever sequence of sizes is written, the last one reads back.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  readSidecar,
  removeSidecar,
  SIDECAR_IN_PLACE_MAX,
  sidecarPath,
  writeSidecar,
  type Sidecar,
} from '../../src/replication/sidecar.js';
import { tempDirs } from '../helpers/temp.js';

const tmp = tempDirs('kw-sidecar-');

function sidecar(seq: number, snapshots: number): Sidecar {
  return {
    seq,
    etag: `etag-${seq}`,
    generation: 1,
    cursor: seq % 2 ? { offset: 32 + seq * 4120, salt1: 7, salt2: 9, pageSize: 4096 } : null,
    snapshots: Array.from({ length: snapshots }, (_, i) => ({ seq: i + 1, atMs: 1_790_000_000_000 + i })),
  };
}

describe('sidecar', () => {
  it('a shorter record over a longer one is padded in place: same inode, no temp file, reads back the shorter', () => {
    const db = join(tmp(), 'a.db');
    writeSidecar(db, sidecar(1, 20));
    const { ino, size } = statSync(sidecarPath(db));
    writeSidecar(db, sidecar(2, 1));
    assert.equal(statSync(sidecarPath(db)).ino, ino, 'rewritten in place, not renamed over');
    assert.equal(statSync(sidecarPath(db)).size, size, 'padded to the earlier length');
    assert.match(readFileSync(sidecarPath(db), 'utf8'), / +$/);
    assert.deepEqual(readSidecar(db), sidecar(2, 1));
    assert.deepEqual(readdirSync(join(db, '..')), ['a.db.chain']);
  });

  it('any sequence of record sizes, across the in-place limit and back, reads back the last one', () => {
    const dir = tmp();
    let n = 0;
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 6 }), (sizes) => {
        const db = join(dir, `p${n++}.db`);
        const written = sizes.map((snapshots, i) => sidecar(i + 1, snapshots));
        for (const s of written) writeSidecar(db, s);
        assert.deepEqual(readSidecar(db), written.at(-1));
        assert.equal(existsSync(sidecarPath(db) + '.tmp'), false);
      }),
      { numRuns: 40 },
    );
    assert.ok(Buffer.byteLength(JSON.stringify(sidecar(1, 200))) > SIDECAR_IN_PLACE_MAX, 'the sizes cross the limit');
  });

  it('an unreadable record reads as absent, and remove leaves nothing', () => {
    const db = join(tmp(), 'b.db');
    assert.equal(readSidecar(db), undefined);
    writeSidecar(db, sidecar(3, 0));
    removeSidecar(db);
    assert.equal(readSidecar(db), undefined);
    assert.equal(existsSync(sidecarPath(db)), false);
  });
});

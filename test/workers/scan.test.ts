/**
 * The start-up scan of a data dir (src/workers/scan.ts): each actor file's committed alarm; a file a
 * worker holds open (EXCLUSIVE locking mode, actor-db.ts) is skipped as held, not reported as
 * unreadable; a file that is not a database is reported; no `-shm` is left beside a file read.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { actorDbPath, createActorDbSync, openActorDb, writeAlarm } from '../../src/workers/actor-db.js';
import { HELD, scanAlarms } from '../../src/workers/scan.js';

describe('the start-up scan', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kw-scan-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('reads each closed file’s alarm, skips the held one, reports the unreadable one', () => {
    const free = parseAddress('t/C/free');
    const held = parseAddress('t/C/held');
    const none = parseAddress('t/C/none');
    for (const [a, at] of [
      [free, 1_000],
      [held, 2_000],
      [none, null],
    ] as const) {
      const db = createActorDbSync(actorDbPath(dataDir, a), a);
      writeAlarm(db, at);
      db.close();
    }
    writeFileSync(join(dataDir, 'actors', 't', 'C', 'junk.db'), 'not a database');
    writeFileSync(actorDbPath(dataDir, none) + '-shm', Buffer.alloc(32_768)); // an older version's, left behind
    const open = openActorDb(actorDbPath(dataDir, held), held, false)!; // a worker's handle: kept open, its lock held
    open.exec('CREATE TABLE IF NOT EXISTS touched (x)'); // written meanwhile, as a worker's events do
    try {
      const errors: string[] = [];
      const found = [...scanAlarms(dataDir, (path) => errors.push(path))];
      const alarms = found.filter((f) => f !== null && f !== HELD).map((f) => (f as { address: { key: string }; at: number }).address.key);
      assert.deepEqual(alarms, [free.key], 'the closed file with an alarm');
      assert.equal(found.filter((f) => f === HELD).length, 1, 'the open file is held');
      assert.equal(found.length, 4);
      assert.deepEqual(errors, [join(dataDir, 'actors', 't', 'C', 'junk.db')], 'only the junk file is reported');
    } finally {
      open.close();
    }
    const again = [...scanAlarms(dataDir, () => undefined)].filter((f) => f !== null && f !== HELD);
    assert.equal(again.length, 2, 'once closed, the held file is read');
    const shm = readdirSync(join(dataDir, 'actors', 't', 'C')).filter((f) => f.endsWith('-shm'));
    assert.deepEqual(shm, [], 'no -shm left beside a file read (the node never uses one)');
  });
});

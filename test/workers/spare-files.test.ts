/**
 * Spare actor files (src/workers/spare-files.ts): a worker keeps new actors' database files made
 * and fsynced ahead of need, and a new actor's file is one of them renamed into place.
 */
import assert from 'node:assert/strict';
import { fstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { silentLogger } from '../../src/core/logger.js';
import { MemoryStore } from '../../src/store/memory.js';
import { actorDbPath, newFileImage } from '../../src/workers/actor-db.js';
import { SpareActorFiles } from '../../src/workers/spare-files.js';
import { fsyncFd } from '../../src/store/fs/io.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { tempDirs } from '../helpers/temp.js';
import { Counter, InlineActors, okResult } from '../helpers/inline-actors.js';

const dir = tempDirs('kw-spare-');
const envs: InlineActors[] = [];
after(async () => {
  for (const e of envs) await e.cleanup();
});

const inodes = (folder: string) => new Set(readdirSync(folder).map((f) => statSync(join(folder, f)).ino));

describe('spare actor files', () => {
  it('keeps `target` files ready, each a new actor’s image, and makes another for each one taken', async () => {
    const folder = join(dir(), 'spare', '0');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, '7.db'), 'half written by an earlier run');
    const spares = new SpareActorFiles(folder, 3, newFileImage(), silentLogger());
    spares.start();
    await spares.settled();
    assert.equal(spares.readyCount, 3);
    const files = readdirSync(folder).sort();
    assert.deepEqual(files, ['0.db', '1.db', '2.db'], 'the earlier run’s file is gone');
    for (const f of files) assert.ok(readFileSync(join(folder, f)).equals(newFileImage()));

    const target = join(dir(), 'actor.db');
    const spareInodes = inodes(folder);
    assert.equal(spares.moveTo(target), true);
    assert.ok(spareInodes.has(statSync(target).ino));
    assert.equal(spares.readyCount, 2);
    await spares.settled();
    assert.equal(spares.readyCount, 3, 'a replacement was made');

    rmSync(join(folder, '3.db')); // removed by hand: that one is skipped, the next offered
    const ready = spares.readyCount;
    let moved = 0;
    for (let i = 0; i < ready; i++) if (spares.moveTo(join(dir(), `b${i}.db`))) moved++;
    assert.equal(moved, ready - 1);
  });

  it('a later start keeps the whole files an earlier run left ready and makes only what is missing', async () => {
    const folder = join(dir(), 'spare', '3');
    const namedBeforeFsync: string[] = [];
    const fsyncChecked = async (fd: number) => {
      const ino = fstatSync(fd).ino;
      namedBeforeFsync.push(...readdirSync(folder).filter((f) => f.endsWith('.db') && statSync(join(folder, f)).ino === ino));
      await fsyncFd(fd);
    };
    const first = new SpareActorFiles(folder, 3, newFileImage(), silentLogger(), fsyncChecked);
    first.start();
    await first.settled();
    assert.equal(first.moveTo(join(dir(), 'e0.db')), true);
    await first.settled();
    const kept = readdirSync(folder).sort();
    assert.equal(kept.length, 3);
    for (const f of kept) assert.match(f, /^\d+\.db$/, 'each made as <n>.tmp, named <n>.db once whole');
    assert.deepEqual(namedBeforeFsync, [], 'no <n>.db name before its file was fsynced');
    const keptInodes = inodes(folder);
    // What a run killed while making files, or an older version, leaves beside them:
    writeFileSync(join(folder, '4.tmp'), 'half written');
    writeFileSync(join(folder, '5.db'), 'other bytes');
    writeFileSync(join(folder, '6.db'), Buffer.concat([newFileImage(), Buffer.from('x')]));

    const next = new SpareActorFiles(folder, 4, newFileImage(), silentLogger());
    next.start();
    assert.equal(next.readyCount, 3, 'the three whole files are ready at once');
    await next.settled();
    assert.equal(next.readyCount, 4);
    const files = readdirSync(folder).sort();
    const past = `${Math.max(...kept.map((f) => parseInt(f, 10))) + 1}.db`;
    assert.deepEqual(files, [...kept, past].sort(), 'one made, numbered past the kept ones; the rest removed');
    for (const f of kept) assert.ok(keptInodes.has(statSync(join(folder, f)).ino), `${f} kept, not made again`);
    for (const f of files) assert.ok(readFileSync(join(folder, f)).equals(newFileImage()));

    const fewer = new SpareActorFiles(folder, 2, newFileImage(), silentLogger());
    fewer.start();
    assert.equal(fewer.readyCount, 2);
    assert.equal(readdirSync(folder).length, 2, 'past the target, files are removed');
  });

  it('lets a caller wait for the file being made when none is ready, and go when that one fails', async () => {
    const folder = join(dir(), 'spare', '2');
    const { log, lines } = capturedLogger();
    const spares = new SpareActorFiles(folder, 1, newFileImage(), log);
    spares.start();
    await spares.settled();
    assert.equal(spares.comingSoon, false, 'one is ready');
    assert.equal(spares.moveTo(join(dir(), 'd0.db')), true);
    assert.equal(spares.readyCount, 0);
    assert.equal(spares.comingSoon, true, 'the replacement is being made');
    await spares.nextMade();
    assert.equal(spares.readyCount, 1, 'the wait ends with the replacement ready');
    assert.equal(spares.moveTo(join(dir(), 'd1.db')), true);

    // Its folder gone, the replacement this moveTo starts fails: the waiter is let go, spares are off.
    await spares.settled();
    rmSync(folder, { recursive: true, force: true });
    assert.equal(spares.moveTo(join(dir(), 'd2.db')), false, 'the ready file went with its folder');
    assert.equal(spares.comingSoon, true, 'a replacement is being made');
    await spares.nextMade();
    assert.equal(spares.comingSoon, false);
    assert.equal(spares.moveTo(join(dir(), 'd3.db')), false, 'spares are off');
    assert.ok(
      lines.some((l) => String(l.msg).includes('making spare actor files failed')),
      'the failure was logged',
    );
  });

  it('makes its files without fsync where fsync does nothing (fsync false), the same bytes', async () => {
    const folder = join(dir(), 'spare', '1');
    const spares = new SpareActorFiles(folder, 2, newFileImage(), silentLogger(), null);
    spares.start();
    await spares.settled();
    assert.equal(spares.readyCount, 2);
    for (const f of readdirSync(folder)) assert.ok(readFileSync(join(folder, f)).equals(newFileImage()));
    assert.equal(spares.moveTo(join(dir(), 'c.db')), true);
  });

  it('turns itself off with a warning when it cannot make its folder; nothing is offered', async () => {
    const blocker = join(dir(), 'a-file');
    writeFileSync(blocker, '');
    const { log, lines } = capturedLogger();
    const spares = new SpareActorFiles(join(blocker, 'spare'), 3, newFileImage(), log);
    spares.start();
    await spares.settled();
    assert.equal(spares.moveTo(join(dir(), 'x.db')), false);
    assert.equal(lines.filter((l) => /spare actor files failed/.test(l.msg)).length, 1);
  });

  it('a new actor’s file is a spare renamed into place, and the actor works, restarts and survives a crash', async () => {
    const e = new InlineActors({ Counter }, { replicationDelayMs: 60_000 }, new MemoryStore());
    envs.push(e);
    const folder = join(e.dataDir, 'spare', '0');
    e.spares = new SpareActorFiles(folder, 2, newFileImage(), silentLogger());
    e.spares.start();
    await e.spares.settled();
    await e.restart(); // the slots take the spares up
    const before = inodes(folder);

    assert.equal(okResult(await e.call('t/Counter/a', 'add', 1)), 1);
    const file = actorDbPath(e.dataDir, parseAddress('t/Counter/a'));
    assert.ok(before.has(statSync(file).ino), 'the actor’s file is one of the spares');
    assert.equal(e.spares.readyCount, 1);

    assert.equal(okResult(await e.call('t/Counter/a', 'add', 1)), 2);
    await e.restart();
    assert.equal(okResult(await e.call('t/Counter/a', 'add', 1)), 3);
    e.crash({ replicationDelayMs: 60_000 }); // kill -9: the committed calls are in the local file
    assert.equal(okResult(await e.call('t/Counter/a', 'add', 1)), 4);
    await e.spares.settled();
  });
});

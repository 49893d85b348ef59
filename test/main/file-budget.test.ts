import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DEFAULTS, type Tunable } from '../../src/core/config.js';
import { isKeepworkError } from '../../src/core/errors.js';
import { FS_OPEN_FILES_MAX } from '../../src/store/fs/options.js';
import {
  bucketFilesOf,
  FILES_PER_DB,
  planFiles,
  RESERVE_MAIN,
  RESERVE_PER_WORKER,
  type FileBudgetSettings,
} from '../../src/main/file-budget.js';
import { FALLBACK_FILE_LIMIT, parseFileLimit, readFileLimit } from '../../src/main/file-limit.js';

const defaults: FileBudgetSettings = {
  dbCacheMax: DEFAULTS.dbCacheMax,
  workerConcurrency: DEFAULTS.workerConcurrency,
  spareActorFiles: DEFAULTS.spareActorFiles,
  httpConnectionsMax: DEFAULTS.httpConnectionsMax,
};
const none = new Set<Tunable>();

/** What the sized parts use at most, as the plan counts them. */
function used(s: FileBudgetSettings, workers: number, bucketFiles: number): number {
  const reserve = RESERVE_MAIN + RESERVE_PER_WORKER * workers + bucketFiles * (workers + 1);
  return reserve + s.httpConnectionsMax + workers * (s.spareActorFiles + FILES_PER_DB * (s.dbCacheMax + s.workerConcurrency));
}

describe('planFiles', () => {
  it('keeps the sizes when they fit', () => {
    const plan = planFiles(1_048_576, 4, defaults, none, 64);
    assert.deepEqual(plan.shrunk, []);
    assert.equal(plan.sizes.dbCacheMax, DEFAULTS.dbCacheMax);
  });

  it('shrinks the defaults to fit 1024 files with 4 workers (the burst that ran out of files)', () => {
    for (const sockets of [0, 32, 64]) {
      const plan = planFiles(1024, 4, defaults, none, sockets);
      assert.ok(plan.files <= 1024, `${plan.files} files`);
      assert.ok(used({ ...defaults, ...plan.sizes }, 4, sockets) <= 1024);
      assert.ok(plan.sizes.dbCacheMax >= 1 && plan.sizes.workerConcurrency >= 1 && plan.sizes.httpConnectionsMax >= 1);
      assert.ok(plan.shrunk.includes('dbCacheMax'));
    }
  });

  it('refuses a dbCacheMax the user set that cannot fit, naming it, the limit and what fits', () => {
    assert.throws(
      () => planFiles(1024, 4, { ...defaults, dbCacheMax: 2048 }, new Set<Tunable>(['dbCacheMax']), 32),
      (e: unknown) => isKeepworkError(e, 'BAD_CONFIG') && /dbCacheMax 2048/.test(e.message) && /\(1024, RLIMIT_NOFILE/.test(e.message),
    );
  });

  it('keeps a set dbCacheMax that fits and shrinks the rest around it', () => {
    const plan = planFiles(1024, 2, { ...defaults, dbCacheMax: 50 }, new Set<Tunable>(['dbCacheMax']), 32);
    assert.equal(plan.sizes.dbCacheMax, 50);
    assert.ok(plan.files <= 1024);
  });

  it('refuses when even the smallest sizes do not fit', () => {
    assert.throws(() => planFiles(100, 4, defaults, none, 0), /RLIMIT_NOFILE/);
  });

  it("counts each thread's bucket client: S3 sockets, a folder's open files, none in memory", () => {
    assert.equal(bucketFilesOf('s3://b/p', { storeSocketsMax: 100 }), 100);
    assert.equal(bucketFilesOf('/var/kw/bucket', { storeSocketsMax: 100 }), FS_OPEN_FILES_MAX);
    assert.equal(bucketFilesOf('memory:', { storeSocketsMax: 100 }), 0);
  });

  it('never plans past the limit, and never shrinks what the user set', () => {
    const sized = ['dbCacheMax', 'workerConcurrency', 'spareActorFiles', 'httpConnectionsMax'] as const;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200_000 }),
        fc.integer({ min: 1, max: 16 }),
        fc.subarray([...sized]),
        fc.record({
          dbCacheMax: fc.integer({ min: 1, max: 100_000 }),
          workerConcurrency: fc.integer({ min: 1, max: 1024 }),
          spareActorFiles: fc.integer({ min: 0, max: 10_000 }),
          httpConnectionsMax: fc.integer({ min: 1, max: 1_000_000 }),
        }),
        fc.integer({ min: 0, max: 10_000 }),
        (limit, workers, setList, config, sockets) => {
          const set = new Set<Tunable>(setList);
          let plan;
          try {
            plan = planFiles(limit, workers, config, set, sockets);
          } catch (e) {
            assert.ok(isKeepworkError(e, 'BAD_CONFIG'));
            return;
          }
          assert.ok(used({ ...config, ...plan.sizes }, workers, sockets) <= limit);
          assert.equal(plan.files, used({ ...config, ...plan.sizes }, workers, sockets));
          for (const k of sized) {
            if (set.has(k)) assert.equal(plan.sizes[k], config[k]);
            assert.ok(plan.sizes[k] <= config[k]);
          }
        },
      ),
    );
  });
});

describe('the open-file limit', () => {
  it('reads the soft limit from a limits text', () => {
    const text = [
      'Limit                     Soft Limit           Hard Limit           Units     ',
      'Max processes             127431               127431               processes ',
      'Max open files            1024                 524288               files     ',
    ].join('\n');
    assert.equal(parseFileLimit(text), 1024);
    assert.equal(parseFileLimit('Max open files            unlimited            unlimited            files'), Number.MAX_SAFE_INTEGER);
    assert.equal(parseFileLimit('nothing here'), null);
  });

  it('falls back where there is no /proc', () => {
    assert.deepEqual(readFileLimit('/nonexistent/limits'), { limit: FALLBACK_FILE_LIMIT, source: 'fallback' });
  });
});

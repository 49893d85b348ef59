import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { histogram, percentiles, perSecond, recommend, s3Price } from '../../src/bench/stats.js';
import { runOrder } from '../../src/bench/run-bench.js';
import { benchTarget } from '../../src/bench/target.js';
import { reportHtml, type BenchReport } from '../../src/bench/report.js';
import { benchCommand, parseSweep } from '../../src/cli/bench-command.js';
import { parseTargets } from '../../src/bench/remote-nodes.js';
import { isKeepworkError } from '../../src/core/errors.js';

describe('keepwork bench: what the measures say', () => {
  it('percentiles are nearest-rank over the values, in any order', () => {
    assert.deepEqual(percentiles([5, 1, 4, 2, 3, 6, 7, 8, 9, 10]), { p50: 5, p90: 9, p99: 10, max: 10 });
    assert.deepEqual(percentiles([7]), { p50: 7, p90: 7, p99: 7, max: 7 });
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1e6 }), { minLength: 1 }), (xs) => {
        const p = percentiles(xs);
        assert.ok(p.p50 <= p.p90 && p.p90 <= p.p99 && p.p99 <= p.max && xs.includes(p.p50));
      }),
    );
  });

  it('perSecond counts events in each second from second 0, empty seconds as 0', () => {
    assert.deepEqual(perSecond([1000 + 4_100, 1000 + 4_900, 1000 + 6_000], 1000), [
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 0],
      [4, 2],
      [5, 0],
      [6, 1],
    ]);
    assert.deepEqual(perSecond([], 0), []);
  });

  it('histogram puts every value in one of its bins, the largest in the last', () => {
    const bins = histogram([0, 1, 2, 10], 5);
    assert.equal(bins.length, 5);
    assert.deepEqual(
      bins.map((b) => b.count),
      [2, 1, 0, 0, 1],
    );
    assert.deepEqual(histogram([3, 3]), [{ from: 3, to: 4, count: 2 }]);
  });

  it('s3Price: requests per unit by operation and the S3 price per million (PUT/LIST $0.005, GET $0.0004 per 1,000)', () => {
    const c = s3Price({ put: 2000, get: 3000, list: 1000, delete: 500 }, 1000);
    assert.deepEqual(c.perOp, { put: 2, get: 3, list: 1, delete: 0.5 });
    assert.equal(c.perUnit, 6.5);
    // per million: 2M PUT × $5/M + 3M GET × $0.4/M + 1M LIST × $5/M = 10 + 1.2 + 5
    assert.equal(c.usdPerMillion, 16.2);
  });

  it('recommend: the smallest value within 5 % of the best mean, and why', () => {
    const r = recommend(
      [
        { value: 256, runs: [1000] },
        { value: 32, runs: [700, 720] },
        { value: 128, runs: [960, 980] },
        { value: 64, runs: [900] },
      ],
      'higher',
      'drain rate',
      'alarms/s',
    )!;
    assert.equal(r.value, 128);
    assert.deepEqual(r.best, { value: 256, metric: 1000 });
    assert.match(r.why, /^128 is the smallest value within 5 % of the best drain rate \(970 alarms\/s against 1000 alarms\/s at 256\)/);
    const only = recommend(
      [
        { value: 32, runs: [5] },
        { value: 128, runs: [10] },
      ],
      'higher',
      'x',
      'u',
    )!;
    assert.equal(only.value, 128);
    assert.match(only.why, /^128 gave the best x \(10 u\) and no smaller value came within 5 % of it$/);
    const first = recommend(
      [
        { value: 32, runs: [10] },
        { value: 128, runs: [5] },
      ],
      'higher',
      'x',
      'u',
    )!;
    assert.equal(first.why, '32 gave the best x (10 u), and it is the smallest value tried');
    assert.equal(recommend([{ value: 1, runs: [NaN] }], 'higher', 'x', 'u'), undefined);
    assert.equal(
      recommend(
        [
          { value: 1, runs: [10] },
          { value: 2, runs: [10.4] },
        ],
        'lower',
        'latency',
        'ms',
      )!.value,
      1,
    );
  });

  it('runOrder: each value once per rep, ascending then descending', () => {
    const order = runOrder({
      kind: 'drain',
      set: { workerThreads: 1 },
      sweep: { name: 'deliveryConcurrencyMax', values: [32, 128] },
      reps: 3,
    });
    assert.deepEqual(
      order.map(([label]) => label),
      [
        'deliveryConcurrencyMax=32',
        'deliveryConcurrencyMax=128',
        'deliveryConcurrencyMax=128',
        'deliveryConcurrencyMax=32',
        'deliveryConcurrencyMax=32',
        'deliveryConcurrencyMax=128',
      ],
    );
    assert.deepEqual(order[1]![1], { workerThreads: 1, deliveryConcurrencyMax: 128 });
    assert.deepEqual(
      runOrder({ kind: 'calls', set: {}, sweep: undefined, reps: 2 }).map(([l]) => l),
      ['calls', 'calls'],
    );
  });

  it('benchTarget narrows the bucket by --prefix: a sub-folder, or a key prefix of the S3 URL', () => {
    assert.equal(benchTarget('/tmp/b', 'p/q').url, join('/tmp/b', 'p/q'));
    assert.equal(benchTarget('s3://bk/pre?endpoint=http://h:1', 'run1').url, 's3://bk/pre/run1/?endpoint=http://h:1');
    assert.equal(benchTarget('s3://bk', 'run1/').url, 's3://bk/run1/');
    assert.equal(benchTarget('s3://bk/pre', undefined).url, 's3://bk/pre');
    for (const [bucket, prefix, message] of [
      ['/tmp/b', '../up', /--prefix must be a relative key prefix/],
      ['sqlite:/tmp/x.db', 'p', /a SQLite bucket is one file/],
      ['memory:', undefined, /a bench needs a bucket its node processes can share/],
    ] as const)
      assert.throws(
        () => benchTarget(bucket, prefix),
        (e: unknown) => isKeepworkError(e, 'BAD_CONFIG') && message.test(e.message),
      );
  });

  it('parseSweep checks every value as --set would, before anything starts', () => {
    assert.deepEqual(parseSweep('deliveryConcurrencyMax=32, 128', {}), { name: 'deliveryConcurrencyMax', values: [32, 128] });
    assert.throws(() => parseSweep('deliveryConcurrencyMax', {}), /--sweep expects name=v1,v2/);
    assert.throws(() => parseSweep('deliveryConcurrencyMax=32,x', {}), /every value must be an integer/);
    assert.throws(() => parseSweep('deliveryConcurrencyMax=0', {}), /deliveryConcurrencyMax/);
    assert.throws(() => parseSweep('noSuchTunable=1', {}), /noSuchTunable/);
    assert.throws(() => parseSweep('deliveryConcurrencyMax=32,32', {}), /repeated/);
  });

  it('--targets: base URLs only; refused with the flags that need nodes the bench starts', async () => {
    assert.deepEqual(parseTargets('http://10.0.0.5:8080/, https://h.example:8443'), ['http://10.0.0.5:8080', 'https://h.example:8443']);
    for (const bad of ['', ' , ', 'ftp://h', '10.0.0.5:8080', 'http://h:1/v1', 'http://h:1?x=1'])
      assert.throws(
        () => parseTargets(bad),
        (e: unknown) => isKeepworkError(e) && e.code === 'BAD_CONFIG' && /--targets/.test(e.message),
        bad,
      );
    const base = { bucket: './b', reps: 1, out: '.', targets: 'http://127.0.0.1:1' };
    await assert.rejects(benchCommand('drain', { ...base, sweep: 'deliveryConcurrencyMax=32,64' }), /--sweep needs nodes the bench starts/);
    await assert.rejects(benchCommand('drain', { ...base, nodes: 2 }), /--nodes counts nodes the bench starts/);
    await assert.rejects(benchCommand('calls', { ...base, set: { workerThreads: 1 } }), /no tunable applies/);
  });

  it('the HTML report: an SVG chart per measure, each with a title and axis titles that name the unit', () => {
    const r: BenchReport = {
      kind: 'calls',
      version: '0.0.0',
      startedAt: 'a',
      finishedAt: 'b',
      bucket: '/tmp/<b>',
      targets: null,
      complete: true,
      stopped: null,
      sweep: null,
      runs: [
        {
          kind: 'calls',
          label: 'calls',
          set: {},
          keys: 1,
          durable: false,
          inFlight: 1,
          complete: true,
          calls: 10,
          failed: 0,
          callsPerSec: 10,
          latencyMs: { p50: 1, p90: 2, p99: 3, max: 4 },
          rateOverTime: [[0, 10]],
          cpuMsPerCall: 1,
          requests: { perOp: {}, perUnit: 0, usdPerMillion: 0 },
        },
      ],
    };
    const html = reportHtml(r);
    assert.equal(html.match(/<svg /g)?.length, 2);
    assert.match(html, /calls answered per second \(calls\/s\)/);
    assert.match(html, /latency \(ms\)/);
    assert.match(html, /\/tmp\/&lt;b&gt;/, 'text is escaped');
    assert.doesNotMatch(html, /<script|<link|src=/, 'self-contained, no script');
  });
});

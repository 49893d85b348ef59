import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ErrorCode } from '../../src/core/errors.js';
import { DEFAULTS, RULES, isSwitch, resolveOptions } from '../../src/core/config.js';

describe('config', () => {
  it('every tunable has a row in docs/tuning.md', () => {
    const tuning = readFileSync(new URL('../../docs/tuning.md', import.meta.url), 'utf8');
    // The names in the first cell of each table row (a row may name two, e.g. `workerThreads`, `workerConcurrency`).
    const documented = new Set(
      tuning
        .split('\n')
        .filter((line) => line.startsWith('| `'))
        .flatMap((line) => [...line.split('|')[1]!.matchAll(/`(\w+)`/g)].map((m) => m[1])),
    );
    const missing = Object.keys(DEFAULTS).filter((k) => !documented.has(k));
    assert.deepEqual(missing, [], 'tunables without a row in docs/tuning.md');
  });

  it('holds the documented defaults (docs/tuning.md, docs/alarm-index.md)', () => {
    const c = resolveOptions();
    assert.equal(c.leasePeriodMs, 10_000);
    assert.equal(c.graceMs, 5_000);
    assert.equal(c.marginMs, 15_000);
    assert.equal(c.alarmSweepMs, 10_000);
    assert.equal(c.sweepPageEntries, 2048);
    assert.equal(c.deliveriesPerSweep, 256);
    assert.equal(c.anyonesDeliveriesPerSweep, 32);
    assert.equal(c.anyonesAfterMargins, 3);
    assert.equal(c.otherShardWalkMs, 10_000);
    assert.equal(c.retryBaseMs, 1_000);
    assert.equal(c.retryMaxMs, 300_000);
    assert.equal(c.idleTimeoutMs, 60_000);
    assert.equal(c.replicationDelayMs, 20);
    assert.equal(c.idempotencyKeysMax, 1_000);
    assert.equal(c.idempotencyRetentionMs, 86_400_000);
    assert.ok(Object.isFrozen(c));
  });

  it('merges options and derives the anyone’s share and the margin', () => {
    const c = resolveOptions({ leasePeriodMs: 2000, graceMs: 500, deliveriesPerSweep: 64 });
    assert.equal(c.marginMs, 2500);
    assert.equal(c.anyonesDeliveriesPerSweep, 8);
    assert.equal(resolveOptions({ deliveriesPerSweep: 64, anyonesDeliveriesPerSweep: 3 }).anyonesDeliveriesPerSweep, 3);
  });

  it('walks other nodes’ shard folders every alarmSweepMs unless otherShardWalkMs is set', () => {
    assert.equal(resolveOptions({ alarmSweepMs: 2_000 }).otherShardWalkMs, 2_000);
    assert.equal(resolveOptions({ alarmSweepMs: 2_000, otherShardWalkMs: 30_000 }).otherShardWalkMs, 30_000);
  });

  it('takes the on/off tunables as booleans from the library', () => {
    const c = resolveOptions();
    assert.deepEqual([c.sweepAdaptive, c.alarmsInMemory, c.newActorsInMemory], [true, true, false]);
    const flipped = resolveOptions({ sweepAdaptive: false, alarmsInMemory: false, newActorsInMemory: true });
    assert.deepEqual([flipped.sweepAdaptive, flipped.alarmsInMemory, flipped.newActorsInMemory], [false, false, true]);
  });

  it('every tunable with a boolean default is a switch, and no integer tunable is a 0–1 flag', () => {
    const switches = Object.keys(DEFAULTS).filter((k) => isSwitch(k));
    assert.deepEqual(switches, ['s3SdkClient', 'sweepAdaptive', 'alarmsInMemory', 'newActorsInMemory']);
    for (const [name, value] of Object.entries(DEFAULTS)) {
      assert.equal(isSwitch(name), typeof value === 'boolean', name);
      const rule = (RULES as Record<string, { min: number; max?: number }>)[name];
      assert.equal(rule === undefined, isSwitch(name), `${name}: a rule exactly when it is an integer`);
      if (rule) assert.ok(!(rule.min === 0 && rule.max === 1), `${name} is a 0–1 integer: make it a switch`);
    }
    assert.equal(isSwitch('toString'), false);
    assert.equal(isSwitch('leasePeriodMs'), false);
  });

  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['a negative period', { leasePeriodMs: -1 }, /^leasePeriodMs must be at least 1, got -1$/],
    ['a fraction', { alarmSweepMs: 1.5 }, /^alarmSweepMs must be an integer/],
    ['a string', { graceMs: '5' }, /^graceMs must be an integer, got "5"$/],
    ['an unknown name', { leasePeriod: 5 }, /^unknown option leasePeriod/],
    ['base above max', { retryBaseMs: 10, retryMaxMs: 5 }, /retryBaseMs \(10\) must not exceed retryMaxMs \(5\)/],
    ['a page too large', { sweepPageEntries: 1e9 }, /^sweepPageEntries must be at most/],
    ['anyone’s above the cap', { deliveriesPerSweep: 4, anyonesDeliveriesPerSweep: 5 }, /anyonesDeliveriesPerSweep/],
    ['skew at the lease', { leasePeriodMs: 1000, skewBoundMs: 1000 }, /skewBoundMs/],
    ['no idempotency keys kept', { idempotencyKeysMax: 0 }, /^idempotencyKeysMax must be at least 1, got 0$/],
    ['too many idempotency keys', { idempotencyKeysMax: 2_000_000 }, /^idempotencyKeysMax must be at most 1000000/],
    ['a zero idempotency retention', { idempotencyRetentionMs: 0 }, /^idempotencyRetentionMs must be at least 1, got 0$/],
    [
      'a switch given 0',
      { sweepAdaptive: 0 },
      /^sweepAdaptive must be true or false, got 0 \(write false: 0 and 1 are taken on the command line only\)$/,
    ],
    ['a switch given 1', { newActorsInMemory: 1 }, /^newActorsInMemory must be true or false, got 1 \(write true: /],
    ['a switch given text', { alarmsInMemory: 'true' }, /^alarmsInMemory must be true or false, got "true"$/],
    ['an integer tunable given a boolean', { leasePeriodMs: true }, /^leasePeriodMs must be an integer, got true$/],
  ];
  for (const [what, options, message] of bad) {
    it(`refuses ${what} with a message naming the option`, () => {
      assert.throws(
        () => resolveOptions(options as never),
        (e: { code: string; message: string }) => {
          assert.equal(e.code, ErrorCode.BadConfig);
          assert.match(e.message, message);
          return true;
        },
      );
    });
  }

  it('DEFAULTS cannot be changed', () => {
    assert.throws(() => ((DEFAULTS as { leasePeriodMs: number }).leasePeriodMs = 1));
  });
});

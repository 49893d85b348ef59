import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCode } from '../../src/core/errors.js';
import { parseTunable, tunablesHelp, unitOf } from '../../src/cli/tunables-help.js';

describe('--set name=value (parseTunable)', () => {
  it('an integer tunable takes an integer; any other text is not a tunable', () => {
    assert.deepEqual(parseTunable('leasePeriodMs=2000'), ['leasePeriodMs', 2000]);
    assert.deepEqual(parseTunable('graceMs=-1'), ['graceMs', -1]); // in range or not: resolveOptions decides
    assert.deepEqual(parseTunable('noSuchTunable=5'), ['noSuchTunable', 5]); // resolveOptions names the unknown option
    for (const text of ['leasePeriodMs=true', 'leasePeriodMs=1.5', 'leasePeriodMs=', 'leasePeriodMs', '=5', 'lease-period=5'])
      assert.equal(parseTunable(text), undefined, text);
  });

  it('a switch takes true, false, 1 or 0', () => {
    assert.deepEqual(parseTunable('sweepAdaptive=true'), ['sweepAdaptive', true]);
    assert.deepEqual(parseTunable('sweepAdaptive=false'), ['sweepAdaptive', false]);
    assert.deepEqual(parseTunable('alarmsInMemory=1'), ['alarmsInMemory', true]);
    assert.deepEqual(parseTunable('newActorsInMemory=0'), ['newActorsInMemory', false]);
  });

  it('a switch refuses any other value with BAD_CONFIG naming it', () => {
    for (const value of ['2', 'yes', 'TRUE', '', '-1', '01']) {
      assert.throws(
        () => parseTunable(`sweepAdaptive=${value}`),
        (e: { code: string; message: string }) => {
          assert.equal(e.code, ErrorCode.BadConfig);
          assert.equal(e.message, `sweepAdaptive must be true, false, 1 or 0, got ${JSON.stringify(value)}`);
          return true;
        },
        value,
      );
    }
  });

  it('the help shows a switch as true or false', () => {
    assert.equal(unitOf('sweepAdaptive'), 'switch');
    assert.equal(unitOf('leasePeriodMs'), 'ms');
    assert.match(tunablesHelp(), /^ {2}sweepAdaptive +true +switch +true or false$/m);
    assert.match(tunablesHelp(), /^ {2}newActorsInMemory +false +switch +true or false$/m);
  });
});

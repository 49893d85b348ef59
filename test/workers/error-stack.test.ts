/**
 * A failed handler's own stack crosses the worker boundary, so that its failure can be traced to
 * the handler's code: the error data the worker sends names the handler's file, and so does the
 * log line of a failed alarm (not an empty `"stack":""`).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ErrorCode, reviveError } from '../../src/core/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import FailsTwice from '../fixtures/classes/fails-twice.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const A = 't/FailsTwice/a';
const HANDLER_FILE = /fixtures\/classes\/fails-twice\.ts:\d+/;

describe('a failed handler’s stack', () => {
  const { log, lines } = capturedLogger();
  const e = new InlineActors({ FailsTwice }, {}, new MemoryStore(), undefined, undefined, log);
  after(() => e.cleanup());

  it('is in the alarm failure’s log line and in the error data the main thread revives', async () => {
    okResult(await e.call(A, 'setAlarm', e.clock.now() + 1_000));
    await e.clock.advance(1_000);
    const r = await e.alarm(A);
    assert.equal(r.type, 'error');
    if (r.type !== 'error') return;
    assert.equal(r.error.code, ErrorCode.HandlerFailed);
    assert.match(r.error.stack ?? '', HANDLER_FILE);
    const revived = reviveError(structuredClone(r.error));
    assert.match(revived.stack ?? '', HANDLER_FILE);
    assert.match(revived.stack ?? '', /failing on purpose \(1 of 2\)/);

    const line = lines.find((l) => l.msg === 'alarm handler failed; retry committed');
    assert.ok(line, 'the failure is logged');
    assert.equal(line.err?.code, ErrorCode.HandlerFailed);
    assert.match(line.err?.stack ?? '', HANDLER_FILE);
  });
});

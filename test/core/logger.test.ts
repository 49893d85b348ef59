/**
 * The deferred logger (src/core/logger.ts `deferredLogger`), a worker thread's: nothing of pino's is
 * made until a line at or above its level is written, and then the lines are the ones
 * `createLogger` writes, children's bindings included.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger, deferredLogger, type Logger, type LoggerSettings } from '../../src/core/logger.js';

/** `createLogger` into an array of parsed lines, counting the loggers made. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  let made = 0;
  const make = (settings: LoggerSettings): Logger => {
    made++;
    return createLogger({ ...settings, destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) } });
  };
  return { lines, make, made: () => made };
}

const withoutTime = ({ time: _, ...rest }: Record<string, unknown>) => rest;

describe('deferredLogger', () => {
  it('makes nothing for lines below its level, children, or level checks', () => {
    const c = capture();
    const log = deferredLogger({ level: 'warn', base: { worker: 1 } }, c.make);
    const child = log.child({ actor: 't/C/a' }).child({ key: 'k' });
    log.info('dropped');
    child.debug({ x: 1 }, 'dropped too');
    assert.equal(log.level, 'warn');
    assert.equal(log.isLevelEnabled('error'), true);
    assert.equal(log.isLevelEnabled('info'), false);
    assert.equal(c.made(), 0, 'no pino logger made yet');
    assert.deepEqual(c.lines, []);
  });

  it('writes what createLogger writes, once a line at its level comes, children with their bindings', () => {
    const c = capture();
    const log = deferredLogger({ level: 'info', base: { worker: 1 } }, c.make);
    const early = log.child({ actor: 't/C/a' });
    early.warn({ n: 1 }, 'first');
    log.info('second');
    early.child({ key: 'k' }).error('third');
    log.debug('below the level');
    assert.equal(c.made(), 1, 'one pino logger, made at the first line');
    const direct = capture();
    const plain = createLogger({
      level: 'info',
      base: { worker: 1 },
      destination: { write: (s: string) => void direct.lines.push(JSON.parse(s) as Record<string, unknown>) },
    });
    plain.child({ actor: 't/C/a' }).warn({ n: 1 }, 'first');
    plain.info('second');
    plain.child({ actor: 't/C/a' }).child({ key: 'k' }).error('third');
    assert.deepEqual(c.lines.map(withoutTime), direct.lines.map(withoutTime));
  });

  it('hands over to pino for anything else it is asked, and refuses an unknown level at once', () => {
    const c = capture();
    const log = deferredLogger({ level: 'info' }, c.make);
    assert.equal(typeof log.bindings(), 'object');
    assert.equal(c.made(), 1);
    assert.throws(() => deferredLogger({ level: 'loud' }, c.make), /level/);
  });

  it("sets pino's own level when its level is set", () => {
    const c = capture();
    const log = deferredLogger({ level: 'warn' }, c.make);
    log.level = 'debug';
    log.debug('now written');
    assert.equal(c.made(), 1);
    assert.deepEqual(
      c.lines.map((l) => l.msg),
      ['now written'],
    );
  });
});

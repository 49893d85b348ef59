/**
 * The pino logger factory: one JSON line per event of note. Components get a child logger with
 * their own bindings (`component`, and later the actor address, generation and key).
 *
 * pino is required when a logger is first made, not when this module is imported, and a worker
 * thread's logger (`deferredLogger`) makes its pino logger only when it first writes a line: a
 * worker logs rarely (a warning, an error), and importing pino costs a thread ~36 ms of CPU as it
 * starts, before its first event (docs/benchmarks.md#restart).
 */
import { createRequire } from 'node:module';
import type { Bindings, ChildLoggerOptions, DestinationStream, Logger, LoggerOptions } from 'pino';

export type { Logger };

export interface LoggerSettings {
  level?: string;
  /** Extra fields on every line (nodeId, epoch, ...). */
  base?: Record<string, unknown>;
  /** Where lines go: a pino destination; stdout when absent. */
  destination?: DestinationStream;
}

type Pino = typeof import('pino');
let loaded: Pino | undefined;
const pino = (): Pino => (loaded ??= createRequire(import.meta.url)('pino') as Pino);

const levelOf = (settings: LoggerSettings) => settings.level ?? process.env.KEEPWORK_LOG_LEVEL ?? 'info';

export function createLogger(settings: LoggerSettings = {}): Logger {
  const p = pino();
  const options: LoggerOptions = {
    level: levelOf(settings),
    base: { pid: process.pid, ...settings.base },
    timestamp: p.stdTimeFunctions.isoTime,
  };
  return settings.destination ? p(options, settings.destination) : p(options);
}

/** A logger that writes nothing (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino()({ level: 'silent' });
}

/** pino's levels: a method below the logger's level writes nothing. */
const LEVELS: Readonly<Record<string, number>> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/**
 * `createLogger(settings)`, made when a line at or above its level is first written (or anything
 * else of pino's is asked for): until then a line below the level is dropped, `level` and
 * `isLevelEnabled` answer from the settings, and `child` makes a deferred child, which becomes
 * pino's own child of the same bindings once one of them writes. Setting a property (`level`)
 * makes it at once. `make`: a test seam.
 */
export function deferredLogger(settings: LoggerSettings = {}, make: (s: LoggerSettings) => Logger = createLogger): Logger {
  const level = levelOf(settings);
  if (!Object.hasOwn(LEVELS, level)) return make(settings); // pino says what is wrong with it, now
  return deferred(() => make(settings), level);
}

function deferred(make: () => Logger, level: string): Logger {
  let real: Logger | undefined;
  const load = () => (real ??= make());
  const threshold = LEVELS[level]!;
  const method = (name: string) => {
    if (LEVELS[name]! < threshold) return () => undefined;
    return (...args: unknown[]) => (load()[name as 'info'] as (...a: unknown[]) => void)(...args);
  };
  return new Proxy({} as Logger, {
    get(_, prop) {
      if (!real) {
        if (prop === 'level') return level;
        if (prop === 'isLevelEnabled') return (l: string) => threshold !== Infinity && (LEVELS[l] ?? Infinity) >= threshold;
        if (prop === 'child')
          return (bindings: Bindings, options?: ChildLoggerOptions) =>
            options ? load().child(bindings, options) : deferred(() => load().child(bindings), level);
        if (typeof prop === 'string' && prop !== 'silent' && Object.hasOwn(LEVELS, prop)) return method(prop);
      }
      const target = load();
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
    set(_, prop, value) {
      return Reflect.set(load(), prop, value); // `log.level = 'debug'`: pino's own setter
    },
  });
}

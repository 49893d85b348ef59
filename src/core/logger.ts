/**
 * The pino logger factory: one JSON line per event of note. Components get a child logger with
 * their own bindings (`component`, and later the actor address, generation and key).
 */
import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

export interface LoggerSettings {
  level?: string;
  /** Extra fields on every line (nodeId, epoch, ...). */
  base?: Record<string, unknown>;
  /** Where lines go: a pino destination; stdout when absent. */
  destination?: pino.DestinationStream;
}

export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? process.env.KEEPWORK_LOG_LEVEL ?? 'info',
    base: { pid: process.pid, ...settings.base },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return settings.destination ? pino(options, settings.destination) : pino(options);
}

/** A logger that writes nothing (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

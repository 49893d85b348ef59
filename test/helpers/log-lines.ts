/** A pino logger whose lines a test reads back (parsed JSON), instead of writing them anywhere. */
import { createLogger, type Logger } from '../../src/core/logger.js';

export interface LogLine {
  level: number;
  msg: string;
  err?: { type?: string; message?: string; stack?: string; code?: string };
  [field: string]: unknown;
}

export function capturedLogger(level = 'debug'): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = createLogger({ level, destination: { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) } });
  return { log, lines };
}

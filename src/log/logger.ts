import { type Logger, pino } from 'pino';
import type { LogLevel } from '../config/options.js';

/** Field names used across the service's logs, so they can be searched for consistently. */
export const LOG_FIELDS = { component: 'component', pipeline: 'pipeline', connection: 'connection' } as const;

// Anything that may hold a credential is censored wherever it appears in a log line.
const REDACT_PATHS = [
  'dsn',
  '*.dsn',
  'password',
  '*.password',
  'databaseUrl',
  '*.databaseUrl',
  'sslpassword',
  '*.sslpassword',
  'tls',
  '*.tls',
  'ssl',
  '*.ssl',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export function createLogger(level: LogLevel): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '****' } });
}

export type { Logger };

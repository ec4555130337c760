import { type Logger, pino } from 'pino';
import type { LogFormat, LogLevel } from '../config/options.js';

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

/** How every logger of the service censors secrets. */
export const LOG_REDACTION = { paths: REDACT_PATHS, censor: '****' };

/**
 * The service's logger. JSON, a line an entry, for machines; with `pretty` (or `auto` when stdout
 * is a terminal) coloured lines for a person, through pino's own pretty transport (a worker
 * thread). Secrets are censored before either.
 */
export function createLogger(
  level: LogLevel,
  format: LogFormat = 'json',
  stdoutIsTty = process.stdout.isTTY === true,
): Logger {
  const options = { level, redact: LOG_REDACTION };
  if (!prettyLogs(format, stdoutIsTty)) return pino(options);
  return pino(
    options,
    pino.transport({
      target: 'pino-pretty',
      options: { colorize: stdoutIsTty, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
    }),
  );
}

/** Whether the logs are written for a person: asked for, or `auto` on a terminal. */
export const prettyLogs = (format: LogFormat, stdoutIsTty: boolean): boolean =>
  format === 'pretty' || (format === 'auto' && stdoutIsTty);

export type { Logger };

import type { Logger } from '../log/logger.js';
import { isConnectionLoss, messageOf } from './error-kinds.js';
import { type AttributedRun, attributedRun } from './run-attribution.js';

/** What becomes of an error that reached the process with nobody to handle it. */
export type UncaughtVerdict = 'fail-run' | 'carry-on' | 'fatal';

// Codes of sockets and streams that broke or closed, beyond the servers that went away.
const SOCKET_CODES = new Set([
  'ENOTFOUND',
  'ENOTCONN',
  'ERR_SOCKET_CLOSED',
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_PREMATURE_CLOSE',
  'ERR_STREAM_WRITE_AFTER_END',
]);

/**
 * An error escaping a pipeline's data plane ends that pipeline's run, which the pipeline's
 * machine then retries or fails as any other failure. One that belongs to no pipeline is let
 * pass when it is a lost connection (a server going away is no reason to stop the others);
 * anything else is a bug, after which the process cannot be trusted: it ends.
 */
export function verdictOn(error: unknown, run: AttributedRun | undefined): UncaughtVerdict {
  if (run) return 'fail-run';
  const code = (error as { code?: unknown } | null)?.code;
  if (isConnectionLoss(error) || (typeof code === 'string' && SOCKET_CODES.has(code))) return 'carry-on';
  return 'fatal';
}

/** Just what an error says about itself: not every enumerable field a library hung on it. */
const described = (error: unknown) =>
  error instanceof Error
    ? {
        type: error.name,
        message: error.message,
        code: (error as { code?: unknown }).code,
        stack: error.stack,
      }
    : { message: String(error) };

interface Guard {
  logger: Logger;
  exit: (code: number) => void;
}

// Installed once per process however many services it runs (tests run several); the guard of the
// service started last speaks.
const guards: Guard[] = [];

function onUncaught(error: unknown, origin: string): void {
  const guard = guards.at(-1);
  if (!guard) return;
  const run = attributedRun();
  const verdict = verdictOn(error, run);
  if (verdict === 'fail-run' && run) {
    guard.logger.error(
      { err: described(error), pipeline: run.pipeline, origin },
      `unhandled error in the pipeline's data plane; its run fails: ${messageOf(error)}`,
    );
    run.fail(error);
  } else if (verdict === 'carry-on') {
    guard.logger.error(
      { err: described(error), origin },
      `unhandled lost connection, outside any pipeline: ${messageOf(error)}`,
    );
  } else {
    guard.logger.fatal(
      { err: described(error), origin },
      `unhandled error; the process ends: ${messageOf(error)}`,
    );
    guard.exit(1);
  }
}

const onRejection = (reason: unknown) => onUncaught(reason, 'unhandledRejection');

/**
 * Handles 'uncaughtException' and 'unhandledRejection' for the process as `verdictOn` says.
 * Returns the way to remove it again (the listeners go with the last one removed).
 */
export function installProcessGuard(
  logger: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
): () => void {
  const guard = { logger, exit };
  if (guards.length === 0) {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onRejection);
  }
  guards.push(guard);
  let removed = false;
  return () => {
    if (removed) return;
    removed = true;
    guards.splice(guards.indexOf(guard), 1);
    if (guards.length === 0) {
      process.off('uncaughtException', onUncaught);
      process.off('unhandledRejection', onRejection);
    }
  };
}

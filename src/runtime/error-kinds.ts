import { FencedError } from '../core/sink.js';
import { SlotMissingError, SourceNotReadyError, TableNotReplicableError } from '../core/source-errors.js';
import { healsByRetrying, sqlstateOf } from '../core/sqlstate.js';
import { AppError } from '../errors/app-error.js';
import { RefusedChangeError } from '../sinks/refused-change.js';

/**
 * Whether a failure of the data plane may heal by itself (a dropped connection, a restarting
 * server, a deadlock) and is worth retrying, or needs a person (a lost slot, a bad definition, a
 * wrong role, a change the sink refuses). Errors of unknown kind are retried, a bounded number of
 * times (see MAX_RETRIES): they fail the pipeline if they keep coming back.
 */
export function isRetryable(error: unknown): boolean {
  if (
    error instanceof SlotMissingError ||
    error instanceof SourceNotReadyError ||
    error instanceof TableNotReplicableError ||
    error instanceof FencedError ||
    error instanceof RefusedChangeError ||
    error instanceof AppError
  ) {
    return false;
  }
  const sqlstate = sqlstateOf(error);
  return sqlstate === undefined || healsByRetrying(sqlstate);
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

import { AppError } from '../errors/app-error.js';
import { FencedError } from '../sinks/types.js';
import { SlotMissingError, SourceNotReadyError, TableNotReplicableError } from '../source/postgres/errors.js';

/**
 * Whether a failure of the data plane may heal by itself (a dropped connection, a restarting
 * server) and is worth retrying, or needs a person (a lost slot, a bad definition, a wrong role).
 */
export function isRetryable(error: unknown): boolean {
  if (
    error instanceof SlotMissingError ||
    error instanceof SourceNotReadyError ||
    error instanceof TableNotReplicableError ||
    error instanceof FencedError ||
    error instanceof AppError
  ) {
    return false;
  }
  const code = (error as { code?: unknown })?.code;
  // Authentication and authorisation failures do not heal by retrying quickly.
  if (code === '28P01' || code === '28000' || code === '42501' || code === '3D000') return false;
  return true;
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

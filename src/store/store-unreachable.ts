import { BackendTerminatedError, BackendTerminatedUnexpectedlyError, ConnectionError } from 'slonik';

/**
 * Whether a failure of the metadata store's pool is the store being out of reach (down,
 * restarting, the connection lost) rather than a statement it refused: what waits for the store
 * to come back, where anything else is a fault to report.
 */
export function isStoreUnreachable(error: unknown): boolean {
  return (
    error instanceof ConnectionError ||
    error instanceof BackendTerminatedError ||
    error instanceof BackendTerminatedUnexpectedlyError
  );
}

import type { RetryAdvice, RetryClass } from '../../core/retry-advice.js';

/**
 * Room on a full spool disk comes from a person or another process, seldom within seconds; each
 * attempt receives the whole transaction from the slot again, so attempts are at least this far apart.
 */
export const SPOOL_FULL_RETRY_MS = 30_000;

/**
 * A spool file could not be written: the directory is named, with what was being spooled, so
 * that the operator knows what to free or to move. A full disk (ENOSPC) or quota (EDQUOT) has the
 * code SPOOL_FULL and is retried for as long as it takes: the slot keeps the transaction, which
 * is received and replayed whole once there is room. Any other failure is retried a few times.
 */
export class SpoolWriteError extends Error implements RetryAdvice {
  readonly code: string;
  readonly retry: RetryClass;
  readonly retryAfterMs: number | undefined;

  constructor(directory: string, changes: number, cause: unknown) {
    const errno = (cause as NodeJS.ErrnoException | null)?.code ?? 'error';
    const what = `writing a transaction of ${changes} changes`;
    super(
      errno === 'ENOSPC' || errno === 'EDQUOT'
        ? `spool directory ${directory} is full (${errno}) ${what}: free space or set spool_dir`
        : `spool directory ${directory} cannot be written (${errno}) ${what}: check the disk or set spool_dir`,
      { cause },
    );
    this.name = 'SpoolWriteError';
    const full = errno === 'ENOSPC' || errno === 'EDQUOT';
    this.code = full ? 'SPOOL_FULL' : errno;
    this.retry = full ? 'until-reachable' : 'backoff';
    this.retryAfterMs = full ? SPOOL_FULL_RETRY_MS : undefined;
  }
}

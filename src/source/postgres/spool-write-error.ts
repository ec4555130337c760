/**
 * A spool file could not be written: the directory is named, with what was being spooled, so
 * that the operator knows what to free or to move. A full disk (ENOSPC) or quota (EDQUOT) has the
 * code SPOOL_FULL, which the pipeline retries for as long as it takes: the slot keeps the
 * transaction, which is received and replayed whole once there is room.
 */
export class SpoolWriteError extends Error {
  readonly code: string;

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
    this.code = errno === 'ENOSPC' || errno === 'EDQUOT' ? 'SPOOL_FULL' : errno;
  }
}

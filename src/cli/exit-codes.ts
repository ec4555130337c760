/** The CLI's exit statuses, which docs/cli.md documents for shell users. */
export const EXIT = {
  ok: 0,
  /** The request failed: the service refused it (404, 409, 422, ...) or failed. */
  failed: 1,
  /** Bad usage: unknown command or flag, a missing argument, an unreadable document; for `serve`, an invalid configuration. */
  usage: 2,
  /** `serve` and `migrate`: the data directory's embedded PostgreSQL is run by another live process. */
  dataDirInUse: 3,
  /** The service could not be reached, or did not answer in time. */
  unreachable: 4,
  /** The service wants a token (401), or the token's role is not enough (403). */
  unauthorized: 5,
  /** `verify`: the sink differs from the source (after `--repair`: still differs). */
  differs: 6,
  /** `verify`: nothing differs, but some tables (or columns' rows) could not be compared. */
  notVerified: 7,
} as const;

/** A failure the CLI reports as one message and an exit status. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

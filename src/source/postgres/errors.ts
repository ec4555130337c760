/**
 * Errors of the PostgreSQL source: the ones the runtime tells apart are core's, re-exported here;
 * the protocol's own stays here. Each message says what is wrong and what the operator should do
 * about it, because they end up in front of the person who configured the pipeline.
 */

import type { RetryAdvice, RetryClass } from '../../core/retry-advice.js';

export {
  PublicationUnfitError,
  SlotMissingError,
  SourceConnectionError,
  SourceNotReadyError,
  TableNotReplicableError,
  type TableProblem,
} from '../../core/source-errors.js';

/** The server sent a pgoutput message we cannot decode or that breaks the protocol's order. */
export class PgoutputProtocolError extends Error implements RetryAdvice {
  /** Received again, the stream may read well: retried, but not for ever. */
  readonly retry: RetryClass = 'backoff';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PgoutputProtocolError';
  }
}

/** The SQLSTATE of a server error, when `error` is one. */
export function sqlState(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

import type { TableRef } from '../core/change.js';
import type { RetryAdvice, RetryClass } from '../core/retry-advice.js';

/**
 * A sink refused a change for good (a constraint, a value its column cannot hold, a privilege):
 * retrying the batch cannot help. Names the table and the key of the change it refused, when the
 * sink could tell, and keeps the sink's own error as the cause.
 */
export class RefusedChangeError extends Error implements RetryAdvice {
  /** Written again, the change would be refused again. */
  readonly retry: RetryClass = 'never';

  constructor(
    readonly table: TableRef | undefined,
    readonly key: Record<string, string | null> | undefined,
    readonly sinkError: string,
    options?: ErrorOptions,
  ) {
    super(
      `the sink refused ${table ? `the change of ${table.schema}.${table.table}` : 'a change'}` +
        `${key ? ` with key ${describeKey(key)}` : ''}: ${sinkError}`,
      options,
    );
    this.name = 'RefusedChangeError';
  }
}

const describeKey = (key: Record<string, string | null>) =>
  `(${Object.keys(key).join(', ')})=(${Object.values(key)
    .map((v) => (v === null ? 'NULL' : v.length > 200 ? `${v.slice(0, 200)}…` : v))
    .join(', ')})`;

import type { RetryAdvice, RetryClass } from './retry-advice.js';
import type { OwnedObjects } from './source.js';

/**
 * Errors of a source that the runtime tells apart: they decide whether a failed pipeline is
 * retried and which field of a definition a refusal names. Each message says what is wrong and
 * what the operator should do about it, because they end up in front of the person who
 * configured the pipeline.
 */

/**
 * The source server is not configured for logical replication, or our role may not use it or
 * lacks a privilege the pipeline needs (or the publication it was given does not serve it).
 */
export class SourceNotReadyError extends Error implements RetryAdvice {
  /** It needs a person: retrying cannot heal it. */
  readonly retry: RetryClass = 'never';

  /** One sentence per problem found, each with its remedy. */
  readonly problems: string[];

  constructor(
    problems: string[],
    /** What is wrong, after the subject: e.g. `is not ready for logical replication`. */
    readonly heading = 'is not ready for logical replication',
    /** A way out that covers several problems at once; printed after them. */
    readonly footer?: string,
    /** The source connection's name, when the caller knows it. */
    readonly connection?: string,
  ) {
    const subject = connection === undefined ? 'the source PostgreSQL' : `source connection '${connection}'`;
    super(`${subject} ${heading}:\n- ${problems.join('\n- ')}${footer ? `\n${footer}` : ''}`);
    this.name = 'SourceNotReadyError';
    this.problems = problems;
  }

  /** The same error, its message naming the source connection `name`. */
  forConnection(name: string): SourceNotReadyError {
    return new SourceNotReadyError(this.problems, this.heading, this.footer, name);
  }
}

/** The changes feed the user made and named (a publication) does not carry everything the pipeline needs. */
export class PublicationUnfitError extends SourceNotReadyError {
  constructor(problems: string[], heading: string, footer?: string, connection?: string) {
    super(problems, heading, footer, connection);
    this.name = 'PublicationUnfitError';
  }

  override forConnection(name: string): PublicationUnfitError {
    return new PublicationUnfitError(this.problems, this.heading, this.footer, name);
  }
}

/** Why one requested table cannot be replicated. */
export interface TableProblem {
  schema: string;
  table: string;
  /** Machine-readable reason. */
  reason: 'missing' | 'not-a-table' | 'partitioned' | 'no-key' | 'replica-identity-nothing';
  /** Human-readable explanation with the remedy. */
  message: string;
}

/** Some requested tables cannot be replicated; `problems` lists every one of them. */
export class TableNotReplicableError extends Error implements RetryAdvice {
  /** It needs a person: retrying cannot heal it. */
  readonly retry: RetryClass = 'never';

  readonly problems: TableProblem[];

  constructor(problems: TableProblem[]) {
    const lines = problems.map((p) => `- ${p.schema}.${p.table}: ${p.message}`);
    super(`${problems.length === 1 ? 'a table' : 'some tables'} cannot be replicated:\n${lines.join('\n')}`);
    this.name = 'TableNotReplicableError';
    this.problems = problems;
  }
}

/**
 * The replication slot does not exist (any more) or was invalidated: changes were lost to the
 * source's WAL recycling or someone dropped the slot. The pipeline must be resynced from a new
 * snapshot; the slot is never recreated silently because that would skip changes. The message
 * names the way out; the source knows only the slot, the runtime adds the pipeline's name.
 */
export class SlotMissingError extends Error implements RetryAdvice {
  /** It needs a person: retrying cannot heal it. */
  readonly retry: RetryClass = 'never';

  constructor(
    readonly slotName: string,
    readonly detail: string,
    options?: ErrorOptions,
    /** The pipeline's name, for the command in the message. */
    readonly pipeline?: string,
  ) {
    const name = pipeline ?? '<name>';
    super(
      `replication slot '${slotName}' ${detail}; the pipeline needs a resync (a new slot and a new copy of ` +
        `every table): run \`replicator resync ${name}\` or POST /v1/pipelines/${name}/resync`,
      options,
    );
    this.name = 'SlotMissingError';
  }

  /** The same error, its message naming pipeline `name`. */
  forPipeline(name: string): SlotMissingError {
    const options = this.cause === undefined ? undefined : { cause: this.cause };
    return new SlotMissingError(this.slotName, this.detail, options, name);
  }
}

/** The replication connection failed or was closed by the server; retrying later may succeed. */
export class SourceConnectionError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SourceConnectionError';
  }
}

/** What a pipeline owns at its source could not be dropped; `owned` says how to drop it by hand. */
export class SourceCleanupError extends Error {
  constructor(
    readonly owned: OwnedObjects,
    detail: string,
    options?: ErrorOptions,
  ) {
    super(`could not drop ${owned.what} on the source (${detail})`, options);
    this.name = 'SourceCleanupError';
  }
}

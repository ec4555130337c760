import { type TableRef, tableKey } from '../../core/change.js';
import type { PropertyDoc } from '../../core/property-docs.js';
import { validationFailed } from '../../errors/app-error.js';
import { checkNameTemplate, fillNameTemplate } from '../name-template.js';
import {
  batchLimitsOf,
  batchPropertyDocs,
  integerProperty,
  refuseUnknownProperties,
} from '../property-values.js';
import type { BatchLimits, SinkProperties } from '../registry.js';
import { subjectProblem, tokenProblem, wildcardOf } from './subjects.js';

/** The NATS sink's properties, parsed and validated. */
export interface NatsSinkConfig extends SinkProperties {
  /** Subject template, `{schema}` and `{table}` its placeholders. */
  subject: string;
  /** The JetStream stream the subjects are stored in. */
  stream: string;
  /** Duplicate window, in milliseconds, of a stream the sink creates. */
  duplicateWindowMs: number;
  batch: BatchLimits;
}

/** Every property of the NATS sink, for error messages and docs/sinks/nats.md. */
export const NATS_SINK_PROPERTIES: readonly PropertyDoc[] = [
  {
    key: 'subject',
    default: '`replicator.{schema}.{table}`',
    description:
      "Subject each table's messages are published to; `{schema}` and `{table}` are replaced by the source table's names, which then must not hold `.`, `*`, `>` or white space. Several tables may share a subject: each message names its table. Subjects starting with `$` or `_INBOX` are refused.",
  },
  {
    key: 'stream',
    default: '`REPLICATOR`',
    description:
      "The JetStream stream that must capture every table's subject (letters, digits, `-` and `_`, at most 64). When it does not exist the sink creates it, capturing the subject template with each placeholder's token as `*`; an existing stream is used as it is.",
  },
  {
    key: 'duplicate_window_ms',
    default: '120000',
    description:
      'Duplicate window of a stream the sink creates, in milliseconds (1000..604800000): a message whose id the stream took within the window is dropped. An existing stream keeps its own.',
  },
  ...batchPropertyDocs('published with one checkpoint', 'published'),
];

const DEFAULT_SUBJECT = 'replicator.{schema}.{table}';
const DEFAULT_STREAM = 'REPLICATOR';
const SUBJECT_MAX_LENGTH = 255;
// Stream names end up in JetStream API subjects and file names: a plain word only.
const STREAM_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function subjectTemplate(text: string | undefined): string {
  if (text === undefined) return DEFAULT_SUBJECT;
  const rest = checkNameTemplate('subject', text);
  const field = 'sink.properties.subject';
  if (text.length > SUBJECT_MAX_LENGTH) {
    throw validationFailed(field, `must be at most ${SUBJECT_MAX_LENGTH} characters`);
  }
  const problem = subjectProblem(rest);
  if (problem) throw validationFailed(field, problem);
  return text;
}

function streamName(text: string | undefined): string {
  if (text === undefined) return DEFAULT_STREAM;
  if (!STREAM_NAME.test(text)) {
    throw validationFailed(
      'sink.properties.stream',
      'must be 1 to 64 letters, digits, hyphens or underscores',
    );
  }
  return text;
}

/** Parses and validates the NATS sink properties; throws a 422 AppError naming the bad key. */
export function parseNatsSinkProperties(props: Record<string, string>): NatsSinkConfig {
  refuseUnknownProperties(props, NATS_SINK_PROPERTIES);
  return {
    subject: subjectTemplate(props.subject),
    stream: streamName(props.stream),
    duplicateWindowMs: integerProperty(
      'duplicate_window_ms',
      props.duplicate_window_ms,
      120_000,
      1_000,
      7 * 24 * 3_600_000,
    ),
    batch: batchLimitsOf(props),
  };
}

/** The subject a table's messages go to. */
export function subjectOf(config: NatsSinkConfig, table: TableRef): string {
  return fillNameTemplate(config.subject, table);
}

/**
 * Refuses (422) a table whose names would not make a subject of their own: a NATS subject token
 * cannot hold `.`, `*`, `>` or white space, and such a name would silently split the subject into
 * more tokens (another table's, perhaps) or make it a wildcard. Names are refused, not escaped, so
 * that a subject reads as the table it carries.
 */
export function checkNatsSinkTables(config: NatsSinkConfig, tables: readonly TableRef[]): void {
  const field = 'sink.properties.subject';
  for (const table of tables) {
    for (const part of ['schema', 'table'] as const) {
      if (!config.subject.includes(`{${part}}`)) continue;
      const problem = tokenProblem(table[part]);
      if (problem) {
        throw validationFailed(
          field,
          `${tableKey(table)} cannot be published: its ${part} name ${problem}, which a NATS subject token cannot hold; leave {${part}} out of the subject`,
        );
      }
    }
    const problem = subjectProblem(subjectOf(config, table));
    if (problem)
      throw validationFailed(field, `${tableKey(table)} cannot be published: its subject ${problem}`);
  }
}

/** The subjects a stream the sink creates captures: the template, each placeholder's token a `*`. */
export const streamSubjectOf = (config: NatsSinkConfig): string => wildcardOf(config.subject);

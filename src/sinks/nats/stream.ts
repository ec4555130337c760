import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { type NatsSinkConfig, streamSubjectOf } from './config.js';

const isStreamNotFound = (error: unknown) =>
  error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;

/** Why the sink cannot store its subjects in the configured stream, and the property to change. */
export interface StreamProblem {
  field: 'sink.properties.subject' | 'sink.properties.stream';
  message: string;
}

async function streamExists(jsm: JetStreamManager, name: string): Promise<boolean> {
  return jsm.streams.info(name).then(
    () => true,
    (error: unknown) => {
      if (isStreamNotFound(error)) return false;
      throw error;
    },
  );
}

/** The stream that captures a subject, or undefined when none does. */
const ownerOf = (jsm: JetStreamManager, subject: string): Promise<string | undefined> =>
  jsm.streams.find(subject).catch((error: unknown) => {
    if (isStreamNotFound(error)) return undefined;
    throw error;
  });

/**
 * What stops the sink from storing `subjects` in the configured stream, changing nothing: another
 * stream capturing one of them, an existing stream that captures one of them not, or a missing
 * stream the sink would not create (one of wildcards only, `*.*`, would take every such subject
 * of the account, other applications' too: such a stream is for its owner to create, knowingly).
 */
export async function streamProblem(
  jsm: JetStreamManager,
  config: NatsSinkConfig,
  subjects: readonly string[],
): Promise<StreamProblem | undefined> {
  const exists = await streamExists(jsm, config.stream);
  const filter = streamSubjectOf(config);
  if (!exists && filter.split('.').every((token) => token === '*')) {
    return {
      field: 'sink.properties.subject',
      message: `stream ${config.stream} does not exist, and the sink does not create a stream capturing every subject of the form ${filter}: create it yourself, or give the subject a fixed first token (such as replicator.{schema}.{table})`,
    };
  }
  for (const subject of new Set(subjects)) {
    const owner = await ownerOf(jsm, subject);
    if (owner === config.stream) continue;
    if (owner !== undefined) {
      return {
        field: 'sink.properties.subject',
        message: `subject ${subject} is captured by stream ${owner}, not by stream ${config.stream}: change the sink's subject or stream property`,
      };
    }
    if (exists) {
      return {
        field: 'sink.properties.stream',
        message: `stream ${config.stream} does not capture subject ${subject}: add it to the stream's subjects, or change the sink's subject property`,
      };
    }
  }
  return undefined;
}

/**
 * Makes sure the configured stream exists and stores every subject the sink publishes to. A
 * missing stream is created (file storage, kept by limits, the configured duplicate window)
 * capturing the subject template with each placeholder's token as `*`, so tables added to the
 * pipeline later are captured too; an existing stream is never changed. A subject that no stream,
 * or another stream, captures is refused here, before anything is published.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  config: NatsSinkConfig,
  subjects: readonly string[],
): Promise<void> {
  const before = await streamProblem(jsm, config, subjects);
  if (before) throw new Error(before.message);
  if (await streamExists(jsm, config.stream)) return;
  await createStream(jsm, config);
  const after = await streamProblem(jsm, config, subjects);
  if (after) throw new Error(after.message);
}

async function createStream(jsm: JetStreamManager, config: NatsSinkConfig): Promise<void> {
  try {
    await jsm.streams.add({
      name: config.stream,
      subjects: [streamSubjectOf(config)],
      description: 'Change events of replicator pipelines',
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      num_replicas: 1,
      duplicate_window: nanos(config.duplicateWindowMs),
    });
  } catch (error) {
    // Another sink of the same stream may have created it meanwhile.
    if (!(await streamExists(jsm, config.stream))) throw error;
  }
}

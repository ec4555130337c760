import { jetstreamManager } from '@nats-io/jetstream';
import { type ConnectionOptions, connect, type NatsConnection } from '@nats-io/transport-node';
import type { TableSchema } from '../../core/change.js';
import { validationFailed } from '../../errors/app-error.js';
import { checkNatsSinkTables, parseNatsSinkProperties, subjectOf } from './config.js';
import { streamProblem } from './stream.js';

/**
 * Checks, before a definition is stored or started, that the sink can store every table's subject
 * in its stream, changing nothing: the server has JetStream, no other stream captures a subject,
 * an existing stream captures them all, a missing one is one the sink would create. A server that
 * cannot be reached now is not judged here; the sink checks again as it opens.
 */
export async function preflightNatsSink(
  connection: ConnectionOptions,
  props: Record<string, string>,
  tables: readonly TableSchema[],
  connectTimeoutMs: number,
): Promise<void> {
  const config = parseNatsSinkProperties(props);
  checkNatsSinkTables(config, tables);
  let nc: NatsConnection;
  try {
    nc = await connect({ ...connection, timeout: connectTimeoutMs });
  } catch {
    return;
  }
  try {
    const jsm = await jetstreamManager(nc, { timeout: connectTimeoutMs }).catch((error: unknown) => {
      if (nc.isClosed()) return undefined;
      throw validationFailed(
        'sink.connection',
        `the NATS server offers no JetStream to this connection: ${(error as Error).message}`,
      );
    });
    if (!jsm) return;
    const problem = await streamProblem(
      jsm,
      config,
      tables.map((t) => subjectOf(config, t)),
    ).catch(() => undefined);
    if (problem) throw validationFailed(problem.field, problem.message);
  } finally {
    await nc.close().catch(() => undefined);
  }
}

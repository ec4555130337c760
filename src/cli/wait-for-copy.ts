import type { ApiClient } from '../client/api-client.js';
import { ok } from '../client/api-client.js';
import { CliError, EXIT } from './exit-codes.js';
import type { CliIo } from './io.js';

const POLL_MS = 500;

/**
 * Polls until the pipeline runs and streams every table (the copy is done); a failure, or a wait
 * for schema review, ends the wait.
 */
export async function waitForCopy(api: ApiClient, name: string, timeoutMs: number, io: CliIo): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const pipeline = await ok(api.GET('/v1/pipelines/{name}', { params: { path: { name } } }));
    if (pipeline.state === 'failed') {
      throw new CliError(`pipeline ${name} failed: ${pipeline.error ?? 'no error recorded'}`, EXIT.failed);
    }
    if (pipeline.state === 'pending_schema_approval') {
      throw new CliError(
        `pipeline ${name} waits for a schema change to be reviewed: see \`replicator status ${name}\``,
        EXIT.failed,
      );
    }
    if (pipeline.state === 'stopped' || pipeline.state === 'paused') {
      throw new CliError(`pipeline ${name} was ${pipeline.state} before its copy was done`, EXIT.failed);
    }
    const progress = await ok(api.GET('/v1/pipelines/{name}/progress', { params: { path: { name } } }));
    // A table dropped at the source is not copied by a resync.
    const tables = progress.tables.filter((t) => t.status !== 'dropped');
    const copied = tables.filter((t) => t.status === 'streaming').length;
    const now = `${pipeline.state}, ${copied} of ${tables.length} tables copied`;
    if (now !== last) {
      last = now;
      io.out(`pipeline ${name}: ${now}\n`);
    }
    if (pipeline.state === 'running' && copied === tables.length) return;
  }
  throw new CliError(
    `pipeline ${name} had not finished its copy after ${timeoutMs / 1000} s (${last || 'no progress seen'})`,
    EXIT.failed,
  );
}

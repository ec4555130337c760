import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { inject } from 'vitest';
import { z } from 'zod';
import type { SinkStateStore } from '../../../src/core/sink.js';
import { createLogger } from '../../../src/log/logger.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, type DatabasePool, DEFAULT_PROJECT_ID } from '../../../src/store/pool.js';
import { sinkStateStore } from '../../../src/store/sink-state-store.js';
import { createDatabase } from '../pg-cluster.js';

/**
 * The metadata store that keeps the bookkeeping of a sink with no storage of its own (a broker, a
 * webhook), as the service does: one database for the file, shared by the kinds that need it.
 */
export interface ServiceState {
  /** A new pipeline in the store, and its sink state. */
  pipeline(): Promise<{ pipelineId: string; state: SinkStateStore }>;
  /** Lets go of the store; the last user closes it. */
  release(): Promise<void>;
}

let store: Promise<DatabasePool> | undefined;
let users = 0;

async function openStore(): Promise<DatabasePool> {
  const [cluster] = inject('pgClusters');
  const url = await createDatabase(cluster?.adminUrl as string, 'sink_contract_store');
  await migrate(url, createLogger('silent'));
  return createStorePool(url);
}

/** Takes the file's store, made on first use. */
export async function serviceState(): Promise<ServiceState> {
  users++;
  store ??= openStore();
  const pool = await store;
  return {
    async pipeline() {
      const pipelineId = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`
        INSERT INTO pipelines (project_id, name, source_connection, source_tables, sink_connection)
        VALUES (${DEFAULT_PROJECT_ID}, ${`contract-${randomUUID()}`}, 'src', '{public.orders}', 'dst')
        RETURNING id`);
      return { pipelineId, state: sinkStateStore(pool, pipelineId) };
    },
    async release() {
      if (--users > 0) return;
      store = undefined;
      await pool.end();
    },
  };
}

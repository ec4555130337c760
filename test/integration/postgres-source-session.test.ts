import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Source } from '../../src/core/source.js';
import { createPostgresSource } from '../../src/source/postgres/postgres-source.js';
import { createDatabase } from '../support/pg-cluster.js';

const [cluster] = inject('pgClusters');

// pg 8 queues a query issued while its client runs another, with a DeprecationWarning (pg 9
// throws): the source's one session must take its callers' queries one after the other.
describe('postgres source session', () => {
  let source: Source;
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);

  beforeAll(async () => {
    const url = await createDatabase(cluster?.adminUrl as string, 'pg_source_session');
    source = createPostgresSource({ connectionString: url });
    await source.connect();
    process.on('warning', onWarning);
  });
  afterAll(async () => {
    process.off('warning', onWarning);
    await source?.close();
  });

  it('answers calls made at once (the slot monitor, the tables watch, the applier) in turn, with no overlapping query', async () => {
    const [position, tables, identity, again] = await Promise.all([
      source.walPosition(),
      source.listTables(),
      source.identity(),
      source.walPosition(),
    ]);
    expect(position).toBeGreaterThan(0n);
    expect(again).toBeGreaterThanOrEqual(position);
    expect(tables).toEqual([]);
    expect(identity).toEqual(expect.any(String));
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.map((w) => w.message)).toEqual([]);
  });

  it('goes on after a call that failed', async () => {
    const [missing, position] = await Promise.allSettled([
      source.describeTables([{ schema: 'public', table: 'missing' }]),
      source.walPosition(),
    ]);
    expect(missing.status).toBe('rejected');
    expect(position).toMatchObject({ status: 'fulfilled', value: expect.any(BigInt) });
    expect(await source.walPosition()).toBeGreaterThan(0n);
  });
});

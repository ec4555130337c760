import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { migrate } from '../../src/store/migrate.js';
import { createStorePool, type DatabasePool, DEFAULT_PROJECT_ID } from '../../src/store/pool.js';
import { sinkStateStore } from '../../src/store/sink-state-store.js';
import { replicationDatabases, sqlOn } from '../support/replication-fixture.js';

const [cluster] = inject('pgClusters');

/** The bookkeeping the service keeps for a sink with no storage of its own (a broker, a webhook). */
describe('sink state in the metadata store', () => {
  let url: string;
  let pool: DatabasePool;

  beforeAll(async () => {
    ({ store: url } = await replicationDatabases(cluster?.adminUrl as string, 'sinkstate'));
    await migrate(url, createLogger('silent'));
    pool = await createStorePool(url);
  });
  afterAll(() => pool?.end());

  async function newPipeline(name: string): Promise<string> {
    const [row] = await sqlOn<{ id: string }>(
      url,
      `INSERT INTO pipelines (project_id, name, source_connection, source_tables, sink_connection)
       VALUES ('${DEFAULT_PROJECT_ID}', '${name}', 'src', '{public.items}', 'dst') RETURNING id`,
    );
    return row?.id as string;
  }

  it('stores a checkpoint that never moves back, with its detail', async () => {
    const state = sinkStateStore(pool, await newPipeline('moves'));
    expect(await state.readCheckpoint()).toBeNull();
    await state.writeCheckpoint({ lsn: 0x1a0n, epoch: 1 }, { unfinished: { t: 3 } });
    expect(await state.readCheckpoint()).toEqual({
      lsn: 0x1a0n,
      epoch: 1,
      detail: { unfinished: { t: 3 } },
    });
    // A replayed batch below the stored position leaves the position where it was.
    await state.writeCheckpoint({ lsn: 0x100n, epoch: 1 });
    expect(await state.readCheckpoint()).toEqual({ lsn: 0x1a0n, epoch: 1, detail: {} });
    await state.writeCheckpoint({ lsn: 0x100000000n, epoch: 2 });
    expect(await state.readCheckpoint()).toMatchObject({ lsn: 0x100000000n, epoch: 2 });
  });

  it('keeps partition markers per table, forgets one table, and is one pipeline only', async () => {
    const one = sinkStateStore(pool, await newPipeline('parts'));
    const other = sinkStateStore(pool, await newPipeline('others'));
    const items = { schema: 'public', table: 'items' };
    const odd = { schema: 'we"ird', table: 'ta.ble' };
    await one.markPartitionDone({ table: items, partitionId: '0' });
    await one.markPartitionDone({ table: items, partitionId: '0' });
    await one.markPartitionDone({ table: items, partitionId: '1' });
    await one.markPartitionDone({ table: odd, partitionId: '0' });
    const sorted = async () =>
      (await one.partitionsDone()).map((p) => `${p.table.schema}|${p.table.table}|${p.partitionId}`).sort();
    expect(await sorted()).toEqual(['public|items|0', 'public|items|1', 'we"ird|ta.ble|0']);
    expect(await other.partitionsDone()).toEqual([]);
    await one.forgetPartitions(items);
    expect(await sorted()).toEqual(['we"ird|ta.ble|0']);
  });

  it('goes with its pipeline', async () => {
    const id = await newPipeline('deleted');
    const state = sinkStateStore(pool, id);
    await state.writeCheckpoint({ lsn: 0x10n, epoch: 1 });
    await state.markPartitionDone({ table: { schema: 'public', table: 'items' }, partitionId: '0' });
    await sqlOn(url, `DELETE FROM pipelines WHERE id = '${id}'`);
    expect(await state.readCheckpoint()).toBeNull();
    expect(await state.partitionsDone()).toEqual([]);
  });
});

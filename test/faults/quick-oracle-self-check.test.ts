import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase } from '../support/pg-cluster.js';
import { sqlOn, waitFor } from '../support/replication-fixture.js';
import { AcknowledgementSampler } from './support/acknowledgement-sampler.js';
import type { CommittedTransaction } from './support/load.js';
import { installVersionGuard, versionViolations } from './support/version-guard.js';

const [cluster] = inject('pgClusters');

/** The fault oracle can fail: each of its checks reports the fault it is there to catch. */
describe('the fault oracle', () => {
  let sink: string;
  let source: string;
  const pipelineId = 'self-check';
  const slotName = 'fault_oracle_self_check';

  beforeAll(async () => {
    [source, sink] = await Promise.all([
      createDatabase(cluster?.adminUrl as string, 'oracle_src'),
      createDatabase(cluster?.adminUrl as string, 'oracle_dst'),
    ]);
    await installVersionGuard(sink);
  });
  afterAll(async () => {
    await sqlOn(source, 'SELECT pg_drop_replication_slot($1)', [slotName]).catch(() => undefined);
  });

  it('records an older row version applied over a newer one, and nothing for a newer one', async () => {
    // As the sink creates a target: the event trigger puts the guard on it.
    await sqlOn(
      sink,
      'CREATE TABLE public.items (id bigint PRIMARY KEY, version bigint NOT NULL, payload text)',
    );
    await sqlOn(sink, "INSERT INTO public.items VALUES (1, 5, 'v5'), (2, 1, 'v1')");
    await sqlOn(sink, "UPDATE public.items SET version = 6, payload = 'v6' WHERE id = 1");
    expect(await versionViolations(sink)).toEqual([]);
    // A change applied again: the row goes back to an older version.
    await sqlOn(
      sink,
      "INSERT INTO public.items VALUES (1, 3, 'v3') ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version",
    );
    expect(await versionViolations(sink)).toEqual([
      { table_name: 'public.items', id: '1', old_version: '6', new_version: '3' },
    ]);
  });

  it('reports a transaction acknowledged on the source that the sink does not hold', async () => {
    await sqlOn(
      sink,
      `CREATE SCHEMA _replicator;
       CREATE TABLE _replicator.checkpoints (pipeline_id text PRIMARY KEY, lsn pg_lsn NOT NULL, epoch bigint NOT NULL);
       CREATE TABLE public.load_tx (id bigint PRIMARY KEY, client int NOT NULL);
       INSERT INTO public.load_tx VALUES (1, 1);`,
    );
    await sqlOn(source, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [slotName]);
    // Two transactions committed before the slot's position: one reached the sink, one did not.
    const committed: CommittedTransaction[] = [
      { id: 1, afterLsn: 1n },
      { id: 2, afterLsn: 2n },
    ];
    const sampler = new AcknowledgementSampler({
      sourceUrl: source,
      sinkUrl: sink,
      slotName,
      pipelineId,
      load: () => ({ committed }),
      phase: async () => 'streaming',
    });
    try {
      await waitFor(async () => sampler.samples > 0, 'a sample');
    } finally {
      await sampler.stop();
    }
    expect(sampler.violations).toHaveLength(1);
    expect(sampler.violations[0]).toMatch(/^transaction 2 committed before 0\/2, .* is not in the sink$/);
  });
});

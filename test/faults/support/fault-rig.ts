import { expect } from 'vitest';
import { parseLsn } from '../../../src/core/lsn.js';
import { sharedStreamName } from '../../../src/runtime/shared-stream/shared-streams.js';
import { sqlOn, tableDigest, waitFor } from '../../support/replication-fixture.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { AcknowledgementSampler } from './acknowledgement-sampler.js';
import { type FaultClusters, startFaultClusters } from './durable-clusters.js';
import { LOAD_SCHEMA_SQL, LOAD_TABLES, LoadGenerator, seedSql } from './load.js';
import { scale } from './scale.js';
import { ServiceChild } from './service-child.js';
import { guarded, installVersionGuard, versionViolations } from './version-guard.js';

export const PIPELINE = 'faults';

export interface RigOptions {
  seedRows?: number;
  /** More SQL for the source after the load tables (other tables, data). */
  sourceSql?: string;
  /** Tables of the pipeline; the load tables by default. */
  tables?: string[];
  /** Tables with a `version` column, which the version guard watches; `public.items` by default. */
  versionedTables?: string[];
  sinkProperties?: Record<string, string>;
  /** The pipeline's snapshot options (`partition_rows`, `parallelism`). */
  snapshot?: Record<string, number>;
  leaseTtl?: string;
  /** The service reaches the source through a proxy the scenario can stall (`sourceProxy`). */
  sourceThroughProxy?: boolean;
}

/**
 * One scenario's world: a source, a sink and a metadata PostgreSQL 15 of their own (durable), the
 * load tables seeded, the version guard in the sink, the service as a child process with
 * connections `src` and `dst`, and pipeline `faults` defined (not started).
 */
export class FaultRig {
  readonly services: ServiceChild[] = [];
  load: LoadGenerator | undefined;
  sampler: AcknowledgementSampler | undefined;
  pipelineId = '';
  sourceProxy: TcpProxy | undefined;
  readonly tables: string[];
  private readonly began = Date.now();

  private constructor(
    readonly clusters: FaultClusters,
    readonly service: ServiceChild,
    private readonly options: RigOptions,
  ) {
    this.tables = options.tables ?? LOAD_TABLES;
    this.services.push(service);
  }

  static async start(label: string, options: RigOptions = {}): Promise<FaultRig> {
    const clusters = await startFaultClusters(label);
    try {
      await sqlOn(
        clusters.urls.source,
        `${LOAD_SCHEMA_SQL}\n${seedSql(options.seedRows ?? scale.seedRows)}\n${options.sourceSql ?? ''}\nANALYZE;`,
      );
      await installVersionGuard(clusters.urls.sink);
      const service = await ServiceChild.start(clusters.urls.metadata, { leaseTtl: options.leaseTtl });
      const rig = new FaultRig(clusters, service, options);
      if (options.sourceThroughProxy) {
        const source = new URL(clusters.urls.source);
        rig.sourceProxy = await TcpProxy.start(source.hostname, Number(source.port));
      }
      await rig.define();
      return rig;
    } catch (error) {
      await clusters.stop();
      throw error;
    }
  }

  /** A line of the scenario's progress, with the seconds since it began (shown by vitest). */
  note(text: string): void {
    console.info(`[${((Date.now() - this.began) / 1000).toFixed(1)} s] ${text}`);
  }

  get urls() {
    return this.clusters.urls;
  }

  /** The slot the pipeline reads: its source connection's shared stream's, or its own. */
  slotName = '';

  private async define(): Promise<void> {
    for (const [name, dsn] of [
      ['src', this.sourceDsn()],
      ['dst', this.urls.sink],
    ] as const) {
      const res = await this.service.request('POST', '/v1/connections', { name, type: 'postgres', dsn });
      if (res.status !== 201)
        throw new Error(`creating connection ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    const created = await this.service.request('POST', '/v1/pipelines', {
      name: PIPELINE,
      source: { connection: 'src', tables: this.tables },
      sink: {
        connection: 'dst',
        ...(this.options.sinkProperties ? { properties: this.options.sinkProperties } : {}),
      },
      ...(this.options.snapshot ? { snapshot: this.options.snapshot } : {}),
    });
    if (created.status !== 201)
      throw new Error(`creating the pipeline: ${created.status} ${JSON.stringify(created.body)}`);
    this.pipelineId = created.body.id;
    const [connection] = await sqlOn<{ id: string }>(
      this.urls.metadata,
      "SELECT id FROM connections WHERE name = 'src'",
    );
    this.slotName =
      created.body.source.slot === 'shared'
        ? sharedStreamName(connection?.id as string)
        : `replicator_${this.pipelineId.replaceAll('-', '')}`;
  }

  /** The source as the service reaches it: directly, or through the proxy. */
  private sourceDsn(): string {
    if (!this.sourceProxy) return this.urls.source;
    const url = new URL(this.urls.source);
    url.port = String(this.sourceProxy.listenPort);
    return url.toString();
  }

  /** A second service process on the same metadata database (for takeovers). */
  async addService(): Promise<ServiceChild> {
    const service = await ServiceChild.start(this.urls.metadata, { leaseTtl: this.options.leaseTtl });
    this.services.push(service);
    return service;
  }

  /** The pipeline as some running service reports it, or undefined if none answers. */
  async pipeline(): Promise<any | undefined> {
    for (const service of this.services) {
      if (!service.responsive) continue;
      const res = await service.request('GET', `/v1/pipelines/${PIPELINE}`).catch(() => undefined);
      if (res?.status === 200) return res.body;
    }
    return undefined;
  }

  async phase(): Promise<string | undefined> {
    for (const service of this.services) {
      if (!service.responsive) continue;
      const res = await service.request('GET', `/v1/pipelines/${PIPELINE}/progress`).catch(() => undefined);
      if (res?.status === 200 && res.body.phase !== 'idle') return res.body.phase;
    }
    return undefined;
  }

  /** Starts the pipeline and the every-200-ms sampling of the slot and the checkpoint. */
  async startPipeline(): Promise<void> {
    const res = await this.service.request('PUT', `/v1/pipelines/${PIPELINE}/state`, { state: 'start' });
    if (res.status !== 200)
      throw new Error(`starting the pipeline: ${res.status} ${JSON.stringify(res.body)}`);
    this.sampler ??= new AcknowledgementSampler({
      sourceUrl: this.urls.source,
      sinkUrl: this.urls.sink,
      slotName: this.slotName,
      pipelineId: this.pipelineId,
      load: () => this.load,
      phase: () => this.phase(),
    });
  }

  startLoad(options: Partial<{ clients: number; transactions: number; maxMs: number }> = {}): LoadGenerator {
    this.load = new LoadGenerator(this.urls.source, {
      clients: options.clients ?? scale.loadClients,
      transactions: options.transactions ?? scale.loadTransactions,
      maxMs: options.maxMs ?? scale.loadMaxMs,
    });
    return this.load;
  }

  async waitForPhase(phase: 'snapshot' | 'streaming', timeoutMs = 120_000): Promise<void> {
    await waitFor(
      async () => (await this.phase()) === phase,
      `the pipeline's phase to be ${phase}`,
      timeoutMs,
    );
  }

  /** Committed rows in the sink's copy of a table (0 while it does not exist). */
  async sinkRows(table: string): Promise<number> {
    const [exists] = await sqlOn<{ ok: boolean }>(
      this.urls.sink,
      'SELECT to_regclass($1) IS NOT NULL AS ok',
      [table],
    );
    if (!exists?.ok) return 0;
    const [row] = await sqlOn<{ n: string }>(this.urls.sink, `SELECT count(*) AS n FROM ${table}`);
    return Number(row?.n ?? 0);
  }

  /** Snapshot partitions of `table` the sink marked done (committed with their rows). */
  async partitionsDone(table: string): Promise<number> {
    const [row] = await sqlOn<{ n: number }>(
      this.urls.sink,
      'SELECT count(*)::int AS n FROM _replicator.snapshot_partitions WHERE pipeline_id = $1 AND table_name = $2',
      [this.pipelineId, table],
    ).catch(() => []);
    return row?.n ?? 0;
  }

  /**
   * Makes every primary key build in the sink keep its transaction open for `seconds` after the
   * index is built (an event trigger at the end of ALTER TABLE), so that a kill can fall inside it.
   */
  async slowKeyBuilds(seconds: number): Promise<void> {
    await sqlOn(
      this.urls.sink,
      `CREATE FUNCTION fault_oracle.slow_key_build() RETURNS event_trigger LANGUAGE plpgsql AS $$
       BEGIN IF current_query() ILIKE '%ADD PRIMARY KEY%' THEN PERFORM pg_sleep(${seconds}); END IF; END $$;
       CREATE EVENT TRIGGER fault_slow_key_build ON ddl_command_end WHEN TAG IN ('ALTER TABLE')
         EXECUTE FUNCTION fault_oracle.slow_key_build();`,
    );
  }

  /** Kills the service while the sink builds a deferred primary key (see slowKeyBuilds); false once it streams. */
  async killDuringKeyBuild(timeoutMs = 180_000): Promise<boolean> {
    const building = await waitFor(
      async () => {
        const [row] = await sqlOn<{ n: number }>(
          this.urls.sink,
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query ILIKE 'ALTER TABLE%ADD PRIMARY KEY%'",
        );
        if ((row?.n ?? 0) > 0) return 'building';
        return (await this.phase()) === 'streaming' ? 'streaming' : undefined;
      },
      'a primary key build in the sink',
      timeoutMs,
      50,
    );
    if (building !== 'building') return false;
    await this.service.kill();
    return true;
  }

  /** The slot's confirmed_flush_lsn on the source and the sink's checkpoint, as positions (0 when absent). */
  async positions(): Promise<{ slot: bigint; checkpoint: bigint }> {
    const [slot] = await sqlOn<{ lsn: string | null }>(
      this.urls.source,
      'SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1',
      [this.slotName],
    );
    const [checkpoint] = await sqlOn<{ lsn: string }>(
      this.urls.sink,
      'SELECT lsn::text AS lsn FROM _replicator.checkpoints WHERE pipeline_id = $1',
      [this.pipelineId],
    ).catch(() => []);
    return {
      slot: slot?.lsn ? parseLsn(slot.lsn) : 0n,
      checkpoint: checkpoint?.lsn ? parseLsn(checkpoint.lsn) : 0n,
    };
  }

  /** Waits until the sink's checkpoint moves past `checkpoint`: the pipeline applies again (after a restart). */
  async waitApplied(checkpoint: bigint, timeoutMs = 120_000): Promise<void> {
    await waitFor(
      async () => (await this.positions()).checkpoint > checkpoint,
      'the pipeline to apply a batch again',
      timeoutMs,
    );
  }

  /** Ends the walsender of the pipeline's slot on the source; whether there was one. */
  async terminateWalsender(): Promise<boolean> {
    const [row] = await sqlOn<{ ok: boolean | null }>(
      this.urls.source,
      'SELECT pg_terminate_backend(active_pid) AS ok FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL',
      [this.slotName],
    );
    return row?.ok === true;
  }

  /**
   * The oracle, after the faults: the load ends, the sink comes to equal the source table by table
   * (row by row, by digest), the version guard was on every versioned target and recorded
   * nothing, the sampled acknowledgements never claimed a transaction the sink lacked, and no
   * service process ended without being told to. The sampling goes on (a scenario may continue).
   */
  async drainAndCheck(timeoutMs = scale.drainTimeoutMs): Promise<{ committed: number; samples: number }> {
    await this.load?.finished();
    for (const table of this.tables) {
      const expected = await tableDigest(this.urls.source, table, 'id');
      await waitFor(
        async () => {
          const actual = await tableDigest(this.urls.sink, table, 'id').catch(() => ({ rows: -1, md5: '' }));
          return actual.rows === expected.rows && actual.md5 === expected.md5;
        },
        `${table} in the sink to equal the source (${expected.rows} rows)`,
        timeoutMs,
      ).catch(async (error) => {
        throw new Error(`${(error as Error).message}; pipeline: ${JSON.stringify(await this.pipeline())}`);
      });
    }
    for (const table of this.options.versionedTables ?? ['public.items'])
      expect(await guarded(this.urls.sink, table), `guard on ${table}`).toBe(true);
    expect(await versionViolations(this.urls.sink)).toEqual([]);
    expect(this.sampler?.violations ?? []).toEqual([]);
    for (const service of this.services) expect(service.unexpectedExits).toEqual([]);
    return { committed: this.load?.committed.length ?? 0, samples: this.sampler?.samples ?? 0 };
  }

  /** Waits until the pipeline runs with no error shown (a recovery is over, not merely data through). */
  async waitHealthy(timeoutMs = 120_000): Promise<void> {
    await waitFor(
      async () => {
        const p = await this.pipeline();
        return p?.state === 'running' && p.error === null ? true : undefined;
      },
      'the pipeline to be running with no error',
      timeoutMs,
    ).catch(async (error) => {
      throw new Error(`${(error as Error).message}; pipeline: ${JSON.stringify(await this.pipeline())}`);
    });
  }

  async dispose(): Promise<void> {
    await this.load?.stop().catch(() => undefined);
    await this.sampler?.stop().catch(() => undefined);
    for (const service of this.services) await service.dispose().catch(() => undefined);
    await this.sourceProxy?.stop();
    await this.clusters.stop();
  }
}

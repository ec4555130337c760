import { setTimeout as sleep } from 'node:timers/promises';
import { type DatabasePool, UniqueIntegrityConstraintViolationError } from 'slonik';
import type { PipelineState } from '../../machines/pipeline.js';
import { parseDuration } from '../config/duration.js';
import { type TableSchema, tableKey } from '../core/change.js';
import { formatLsn } from '../core/lsn.js';
import type { ComparisonReader, SourceComparisonReader } from '../core/table-comparison.js';
import { DEFAULT_SOURCE_SHARE, emptyVerdict, overallResult, type TableVerdict } from '../core/verdict.js';
import type { Logger } from '../log/logger.js';
import type { VerifiableRun } from '../runtime/replication-runner.js';
import { pipelineTablesStore } from '../store/pipeline-tables-store.js';
import { type VerificationRow, verificationsStore } from '../store/verifications-store.js';
import { DEFAULT_VERIFY_LIMITS, TableVerifier, type VerifyLimits } from './table-verifier.js';

/** A pipeline this process runs, as verifications see it. */
export interface VerifiablePipeline {
  id: string;
  name: string;
  projectId: string;
  state: PipelineState;
  /** Set while it streams. */
  run?: VerifiableRun;
}

/** What a worker tells of the verifications it runs (the live feed, the metrics). */
export interface VerificationEvents {
  started(pipeline: VerifiablePipeline): void;
  /** A verification of a pipeline here changed (started, a table done, ended). */
  changed(pipeline: VerifiablePipeline, id: string): void;
  rowsRead(pipeline: VerifiablePipeline, rows: number): void;
  ended(
    pipeline: VerifiablePipeline,
    end: { status: string; result: string | null; durationMs: number; tables: readonly TableVerdict[] },
  ): void;
}

/** How long a verification waits for the pipeline to make a source position durable before it gives up. */
const CATCH_UP_LIMIT_MS = 10 * 60_000;
const TICK_MS = 1_000;

/**
 * Runs the verifications and repairs of the pipelines this process runs: the queued ones are
 * taken (one at a time per pipeline: the store holds at most one queued or running), and those
 * the store says run here but this process does not (it restarted, or took the pipeline over)
 * are marked interrupted, so that a new one can be asked for.
 */
export class VerificationWorker {
  private readonly verifying = new Map<string, AbortController>();
  private readonly repairing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: DatabasePool,
    private readonly pipelines: () => VerifiablePipeline[],
    private readonly workerId: string,
    private readonly logger: Logger,
    private readonly events: VerificationEvents,
    private readonly limits: VerifyLimits = DEFAULT_VERIFY_LIMITS,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.wake(), TICK_MS);
    this.timer.unref();
  }

  /** Looks for work now (after a request), rather than at the next tick. */
  wake(): void {
    this.ticking = this.ticking.then(() =>
      this.tick().catch((error: unknown) => this.logger.warn({ err: error }, 'verifications not looked at')),
    );
  }

  /** Ends the verifications under way (a repair ends with its pipeline's data plane). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const control of this.verifying.values()) control.abort(new Error('the service is stopping'));
    await this.ticking;
    while (this.verifying.size > 0) await sleep(20);
  }

  private async tick(): Promise<void> {
    const here = new Map(this.pipelines().map((p) => [p.id, p]));
    if (here.size === 0) return;
    await this.schedule([...here.values()].filter((p) => p.run && p.state === 'running'));
    for (const row of await verificationsStore.activeOf(this.pool, [...here.keys()])) {
      const pipeline = here.get(row.pipeline_id) as VerifiablePipeline;
      const control = this.verifying.get(row.id);
      if (row.status === 'running' && !control) {
        await verificationsStore.interrupt(this.pool, [row.id], INTERRUPTED);
      } else if (row.status === 'running' && row.cancel_requested) {
        control?.abort(new Cancelled());
      } else if (row.status === 'queued') {
        if (pipeline.state !== 'running') {
          await verificationsStore.finish(this.pool, row.id, {
            status: 'failed',
            tables: [],
            rowsRead: 0,
            error: `the pipeline is ${pipeline.state}: a verification compares a running pipeline`,
          });
          this.events.changed(pipeline, row.id);
        } else if (pipeline.run && (await verificationsStore.claim(this.pool, row.id, this.workerId))) {
          void this.verify(row, pipeline, pipeline.run);
        }
      }
    }
    for (const row of await verificationsStore.repairsOf(this.pool, [...here.keys()])) {
      const pipeline = here.get(row.pipeline_id) as VerifiablePipeline;
      if (row.repair_status === 'running' && !this.repairing.has(row.id)) {
        await verificationsStore.interruptRepairs(this.pool, [row.id], INTERRUPTED);
      } else if (row.repair_status === 'queued' && pipeline.run && !this.repairing.has(row.id)) {
        if (await verificationsStore.claimRepair(this.pool, row.id))
          void this.repair(row, pipeline, pipeline.run);
      }
    }
  }

  /** Queues the verifications a schedule (`verify.interval`) makes due: the first as soon as the pipeline streams. */
  private async schedule(streaming: readonly VerifiablePipeline[]): Promise<void> {
    if (streaming.length === 0) return;
    const ids = streaming.map((p) => p.id);
    for (const due of await verificationsStore.schedules(this.pool, ids)) {
      const interval = parseDuration(due.interval);
      if (interval === undefined) continue;
      if (due.last_at !== null && Date.now() - Date.parse(due.last_at) < interval) continue;
      try {
        await verificationsStore.create(this.pool, {
          projectId: due.project_id,
          pipelineId: due.pipeline_id,
          tables: [],
          sourceShare: due.source_share ?? DEFAULT_SOURCE_SHARE,
          trigger: 'schedule',
        });
      } catch (error) {
        // One is queued or running already (asked by hand meanwhile): the schedule waits for the next.
        if (!(error instanceof UniqueIntegrityConstraintViolationError)) throw error;
      }
    }
  }

  private async verify(
    row: VerificationRow,
    pipeline: VerifiablePipeline,
    run: VerifiableRun,
  ): Promise<void> {
    const control = new AbortController();
    this.verifying.set(row.id, control);
    const startedAt = Date.now();
    const verdicts: TableVerdict[] = [];
    const keys: Record<string, string[][]> = {};
    let rowsRead = 0;
    // Time spent waiting for the sink to hold what the source reads saw: logged, to tell it from reading.
    const waited = { ms: 0 };
    let readers: [SourceComparisonReader, ComparisonReader] | undefined;
    this.events.started(pipeline);
    this.events.changed(pipeline, row.id);
    const log = this.logger.child({ pipeline: pipeline.name, verification: row.id });
    try {
      const sink = await run.sink();
      if (!sink) throw new Error('this sink cannot be read back');
      const statuses = new Map(
        (await pipelineTablesStore.list(this.pool, pipeline.id)).map((t) => [t.table_name, t.status]),
      );
      const tables = run
        .tables()
        .filter((t) => row.tables_requested.length === 0 || row.tables_requested.includes(tableKey(t)));
      readers = [await run.source.open(), await sink.open()];
      const [sourceReader, sinkReader] = readers;
      for (const table of tables) {
        const name = tableKey(table);
        const status = statuses.get(name);
        if (status !== 'streaming') {
          verdicts.push(notStreaming(name, status ?? 'unknown'));
          continue;
        }
        // A table held meanwhile (copied again, repaired) lacks its held changes in the sink: not compared.
        const holds = run.holdGeneration(name);
        const held = () => holds % 2 === 1 || run.holdGeneration(name) !== holds;
        if (held()) {
          verdicts.push(notStreaming(name, 'being copied again or repaired'));
          continue;
        }
        const found = await new TableVerifier({
          table,
          source: run.source,
          sourceReader,
          sink,
          sinkReader,
          waitDurable: async (lsn, signal) => {
            const started = performance.now();
            await this.caughtUp(pipeline.id, run, lsn, signal);
            waited.ms += performance.now() - started;
          },
          atSourcePosition: (reads) => run.compareAtSourcePosition(table, reads),
          signal: control.signal,
          limits: { ...this.limits, sourceShare: row.source_share },
          onRowsRead: (rows) => {
            rowsRead += rows;
            this.events.rowsRead(pipeline, rows);
          },
        }).run();
        verdicts.push(
          held() ? notStreaming(name, 'copied again or repaired during the verification') : found.verdict,
        );
        if (!held() && (found.keys.length > 0 || found.truncated)) keys[name] = found.keys;
        await verificationsStore.progress(this.pool, row.id, verdicts, rowsRead);
        this.events.changed(pipeline, row.id);
      }
      const result = overallResult(verdicts);
      await verificationsStore.finish(this.pool, row.id, {
        status: 'completed',
        result,
        tables: verdicts,
        rowsRead,
        differingKeys: keys,
      });
      log.info(
        { result, rowsRead, ms: Date.now() - startedAt, waitedMs: Math.round(waited.ms) },
        'verification done',
      );
      this.events.ended(pipeline, {
        status: 'completed',
        result,
        durationMs: Date.now() - startedAt,
        tables: verdicts,
      });
    } catch (error) {
      const cancelled = control.signal.reason instanceof Cancelled;
      const message = cancelled ? null : error instanceof Error ? error.message : String(error);
      await verificationsStore
        .finish(this.pool, row.id, {
          status: cancelled ? 'cancelled' : 'failed',
          tables: verdicts,
          rowsRead,
          ...(message ? { error: message } : {}),
        })
        .catch((e: unknown) => log.warn({ err: e }, 'the end of a verification was not stored'));
      if (!cancelled) log.warn({ err: error }, 'verification failed');
      this.events.ended(pipeline, {
        status: cancelled ? 'cancelled' : 'failed',
        result: null,
        durationMs: Date.now() - startedAt,
        tables: verdicts,
      });
    } finally {
      await Promise.all(readers?.map((r) => r.close()) ?? []);
      this.verifying.delete(row.id);
      this.events.changed(pipeline, row.id);
    }
  }

  /**
   * Waits until the pipeline has made `lsn` durable in its sink; fails when the pipeline stops
   * streaming meanwhile, or falls so far behind that the wait would not end in reasonable time.
   */
  private async caughtUp(
    pipelineId: string,
    run: VerifiableRun,
    lsn: bigint,
    signal: AbortSignal,
  ): Promise<void> {
    const deadline = Date.now() + CATCH_UP_LIMIT_MS;
    for (;;) {
      signal.throwIfAborted();
      const durable = run.durable();
      if (durable !== null && durable >= lsn) return;
      const pipeline = this.pipelines().find((p) => p.id === pipelineId);
      if (pipeline?.run !== run) throw new Error('the pipeline stopped streaming during the verification');
      if (pipeline.state !== 'running')
        throw new Error(`the pipeline is ${pipeline.state}: its sink does not move on`);
      if (Date.now() > deadline) {
        throw new Error(
          `the pipeline did not make source position ${formatLsn(lsn)} durable within ${CATCH_UP_LIMIT_MS / 60_000} minutes (durable: ${durable === null ? 'unknown' : formatLsn(durable)})`,
        );
      }
      await sleep(20, undefined, { signal });
    }
  }

  /**
   * Copies the differing rows again through the pipeline's backfill path, table by table, then
   * verifies the repaired tables again.
   */
  private async repair(
    row: VerificationRow,
    pipeline: VerifiablePipeline,
    run: VerifiableRun,
  ): Promise<void> {
    this.repairing.add(row.id);
    const log = this.logger.child({ pipeline: pipeline.name, verification: row.id });
    this.events.changed(pipeline, row.id);
    try {
      const differing = await verificationsStore.differingKeys(this.pool, row.id);
      const shapes = new Map(run.tables().map((t) => [tableKey(t), t]));
      const whole: string[] = [];
      for (const [name, keys] of Object.entries(differing)) {
        const table = shapes.get(name) as TableSchema | undefined;
        if (!table) throw new Error(`${name} is no longer a table of the pipeline`);
        if (keys.length === 0) whole.push(name);
        else await run.repair(table, keys);
      }
      if (whole.length > 0) await run.copyAgain(whole);
      let verifiedBy: string | undefined;
      try {
        const again = await verificationsStore.create(this.pool, {
          projectId: row.project_id,
          pipelineId: row.pipeline_id,
          tables: Object.keys(differing),
          sourceShare: row.source_share,
          trigger: 'repair',
          repairOf: row.id,
        });
        verifiedBy = again.id;
      } catch (error) {
        log.warn({ err: error }, 'the repair is done, but another verification runs: verify again after it');
      }
      await verificationsStore.endRepair(this.pool, row.id, verifiedBy ? { verifiedBy } : {});
      log.info({ tables: Object.keys(differing) }, 'repair done');
      this.wake();
    } catch (error) {
      log.warn({ err: error }, 'repair failed');
      await verificationsStore
        .endRepair(this.pool, row.id, { error: error instanceof Error ? error.message : String(error) })
        .catch(() => undefined);
    } finally {
      this.repairing.delete(row.id);
      this.events.changed(pipeline, row.id);
    }
  }
}

const INTERRUPTED = 'interrupted: the instance running it stopped or no longer runs the pipeline; ask again';

class Cancelled extends Error {
  constructor() {
    super('cancelled');
  }
}

function notStreaming(table: string, status: string): TableVerdict {
  return {
    ...emptyVerdict(table),
    status: 'not_verified',
    reason: `the table is not streaming (${status}): it is compared once it is copied and streams`,
  };
}

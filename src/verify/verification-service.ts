import { type DatabasePool, UniqueIntegrityConstraintViolationError } from 'slonik';
import type { PipelineState } from '../../machines/pipeline.js';
import type { RequestContext } from '../context.js';
import { DEFAULT_SOURCE_SHARE } from '../core/verdict.js';
import { AppError, badRequest, notFound } from '../errors/app-error.js';
import { requirePipeline } from '../pipelines/require-pipeline.js';
import { findSinkKind } from '../sinks/registry.js';
import { connectionsStore } from '../store/connections-store.js';
import type { PipelineRow } from '../store/pipelines-store.js';
import { verificationsStore } from '../store/verifications-store.js';
import { toVerificationView, type VerificationView } from './verification-view.js';

export interface VerifyRequest {
  tables?: string[];
  source_share?: number;
}

/**
 * What users ask of verifications: start one, read them, cancel one, repair what one found. Each is
 * written to the store, where the instance running the pipeline takes it (see VerificationWorker).
 */
export class VerificationService {
  constructor(
    private readonly pool: DatabasePool,
    /** The state of a pipeline running in this process, else undefined (the stored state then holds). */
    private readonly localState: (pipelineId: string) => PipelineState | undefined,
    /** Tells this process's worker to look for work now. */
    private readonly wake: () => void,
  ) {}

  async start(ctx: RequestContext, name: string, body: VerifyRequest): Promise<VerificationView> {
    const row = await requirePipeline(this.pool, ctx, name);
    const tables = [...new Set(body.tables ?? [])];
    tables.forEach((table, i) => {
      if (!row.source_tables.includes(table))
        throw badRequest(`tables[${i}]`, `'${table}' is not a table of pipeline '${name}'`);
    });
    await this.requireReadableSink(row);
    this.requireRunning(row, 'verified');
    try {
      const created = await verificationsStore.create(this.pool, {
        projectId: row.project_id,
        pipelineId: row.id,
        tables,
        sourceShare: body.source_share ?? DEFAULT_SOURCE_SHARE,
        trigger: 'request',
      });
      this.wake();
      return toVerificationView(created, row.name);
    } catch (error) {
      if (!(error instanceof UniqueIntegrityConstraintViolationError)) throw error;
      const active = await verificationsStore.active(this.pool, row.id);
      throw new AppError(
        'VERIFICATION_RUNNING',
        `pipeline '${name}' has a verification ${active?.status ?? 'under way'} already (${active?.id ?? 'unknown'}): one runs at a time`,
        { verifications: active ? [active.id] : [] },
      );
    }
  }

  async list(ctx: RequestContext, name: string, limit: number): Promise<VerificationView[]> {
    const row = await requirePipeline(this.pool, ctx, name);
    return (await verificationsStore.list(this.pool, row.id, limit)).map((v) =>
      toVerificationView(v, row.name),
    );
  }

  async get(ctx: RequestContext, name: string, id: string): Promise<VerificationView> {
    const row = await requirePipeline(this.pool, ctx, name);
    return toVerificationView(await this.requireVerification(row, id), row.name);
  }

  /** Cancels a queued or running verification; 409 INVALID_TRANSITION once it has ended. */
  async cancel(ctx: RequestContext, name: string, id: string): Promise<VerificationView> {
    const row = await requirePipeline(this.pool, ctx, name);
    const verification = await this.requireVerification(row, id);
    if (!(await verificationsStore.cancel(this.pool, id))) {
      throw new AppError(
        'INVALID_TRANSITION',
        `verification ${id} has ended (${verification.status}): nothing to cancel`,
      );
    }
    this.wake();
    return toVerificationView(await this.requireVerification(row, id), row.name);
  }

  /**
   * Copies again the rows a completed verification found differing, through the pipeline's
   * backfill path while it streams, then verifies those tables again. 409 INVALID_TRANSITION when
   * the verification is not completed, found nothing to repair, or is being repaired.
   */
  async repair(ctx: RequestContext, name: string, id: string): Promise<VerificationView> {
    const row = await requirePipeline(this.pool, ctx, name);
    const verification = await this.requireVerification(row, id);
    if (verification.status !== 'completed') {
      throw new AppError(
        'INVALID_TRANSITION',
        `verification ${id} is ${verification.status}: only a completed one is repaired`,
      );
    }
    if (verification.result !== 'differs') {
      throw new AppError(
        'INVALID_TRANSITION',
        `verification ${id} found no differing row (${verification.result}): nothing to repair`,
      );
    }
    this.requireRunning(row, 'repaired');
    if (!(await verificationsStore.queueRepair(this.pool, id))) {
      throw new AppError('INVALID_TRANSITION', `verification ${id} is being repaired already`);
    }
    this.wake();
    return toVerificationView(await this.requireVerification(row, id), row.name);
  }

  private async requireVerification(row: PipelineRow, id: string) {
    const found = UUID.test(id) ? await verificationsStore.find(this.pool, row.id, id) : null;
    if (!found) throw notFound('verification', id);
    return found;
  }

  private requireRunning(row: PipelineRow, what: string): void {
    const state = this.localState(row.id) ?? (row.state as PipelineState);
    if (state !== 'running') {
      throw new AppError(
        'PIPELINE_NOT_RUNNING',
        `pipeline '${row.name}' is ${state}: only a running pipeline's sink is ${what} against its source; ${state === 'paused' ? 'resume' : 'start'} it first`,
        { state },
      );
    }
  }

  private async requireReadableSink(row: PipelineRow): Promise<void> {
    const connection = await connectionsStore.find(this.pool, row.project_id, row.sink_connection);
    const type = connection?.type ?? 'unknown';
    if (!findSinkKind(type)?.comparable) {
      throw new AppError(
        'VERIFY_UNSUPPORTED',
        `pipeline '${row.name}' writes to a ${type} sink, which cannot be read back to compare: verification compares PostgreSQL, MySQL and DuckDB sinks`,
        { field: 'sink.connection' },
      );
    }
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

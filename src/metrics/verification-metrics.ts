import { Counter, Gauge, type Registry } from 'prom-client';
import type { TableVerdict } from '../core/verdict.js';

/** The metrics of verifications run by this process, by pipeline. */
export class VerificationMetrics {
  private readonly runs: Counter<'pipeline' | 'status' | 'result'>;
  private readonly rowsRead: Counter<'pipeline'>;
  private readonly running: Gauge<'pipeline'>;
  private readonly lastDuration: Gauge<'pipeline'>;
  private readonly lastCompleted: Gauge<'pipeline'>;
  private readonly differing: Gauge<'pipeline' | 'table' | 'kind'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.runs = new Counter({
      name: 'replicator_verification_runs_total',
      help: 'Verifications ended in this process, by how they ended (completed, failed, cancelled) and their result (matched, differs, not_verified, none).',
      labelNames: ['pipeline', 'status', 'result'],
      registers,
    });
    this.rowsRead = new Counter({
      name: 'replicator_verification_rows_read_total',
      help: 'Rows read by verifications at the source and the sink together.',
      labelNames: ['pipeline'],
      registers,
    });
    this.running = new Gauge({
      name: 'replicator_verification_running',
      help: 'Whether a verification of the pipeline runs in this process now (1) or not (0).',
      labelNames: ['pipeline'],
      registers,
    });
    this.lastDuration = new Gauge({
      name: 'replicator_verification_last_duration_seconds',
      help: 'How long the last verification ended in this process took.',
      labelNames: ['pipeline'],
      registers,
    });
    this.lastCompleted = new Gauge({
      name: 'replicator_verification_last_completed_timestamp_seconds',
      help: 'Unix time the last completed verification of the pipeline ended.',
      labelNames: ['pipeline'],
      registers,
    });
    this.differing = new Gauge({
      name: 'replicator_verification_differing_rows',
      help: 'Rows the last completed verification found differing, by table and kind (missing, extra, changed).',
      labelNames: ['pipeline', 'table', 'kind'],
      registers,
    });
  }

  started(pipeline: string): void {
    this.running.set({ pipeline }, 1);
  }

  read(pipeline: string, rows: number): void {
    this.rowsRead.inc({ pipeline }, rows);
  }

  ended(
    pipeline: string,
    end: { status: string; result: string | null; durationMs: number; tables: readonly TableVerdict[] },
  ): void {
    this.running.set({ pipeline }, 0);
    this.runs.inc({ pipeline, status: end.status, result: end.result ?? 'none' });
    this.lastDuration.set({ pipeline }, end.durationMs / 1000);
    if (end.status !== 'completed') return;
    this.lastCompleted.set({ pipeline }, Date.now() / 1000);
    for (const table of end.tables) {
      for (const kind of ['missing', 'extra', 'changed'] as const) {
        this.differing.set({ pipeline, table: table.table, kind }, table[kind]);
      }
    }
  }
}

import type { DatabasePool } from 'slonik';
import { type ChangeEvent, type TableSchema, tableKey } from '../../core/change.js';
import type { Sink } from '../../core/sink.js';
import type { PartitionPlan, Source, SourceSnapshot, TransactionVisibility } from '../../core/source.js';
import type { Logger } from '../../log/logger.js';
import type { SnapshotOptions } from '../../pipelines/snapshot-options.js';
import { pipelineTablesStore } from '../../store/pipeline-tables-store.js';
import { snapshotPartitionsStore } from '../../store/snapshot-partitions-store.js';
import type { PipelineStats } from '../pipeline-stats.js';
import type { CopyGate } from '../snapshot/copy-gate.js';
import { runSnapshot } from '../snapshot/snapshot-runner.js';
import { recordPartitionDone } from '../snapshot/snapshot-tables.js';
import { HeldChanges } from './held-changes.js';

/** What the stream applier does with a change of a table. */
export type Route = 'apply' | 'skip' | 'hold';

interface Gate {
  table: TableSchema;
  held: HeldChanges;
  visibility?: TransactionVisibility;
  snapshot?: SourceSnapshot;
  abort: AbortController;
  copy?: Promise<void>;
  copied: boolean;
  failure?: unknown;
}

export interface BackfillDeps {
  pool: DatabasePool;
  pipelineId: string;
  /** The source, connected. */
  source: Source;
  sink: Sink;
  stats: PipelineStats;
  options: SnapshotOptions;
  logger: Logger;
  /** What the earlier copies hold, which a backfill's copy replaces. */
  copyGate?: CopyGate;
}

/**
 * Copies tables again while the stream keeps applying the others. From the moment a backfill is
 * asked for, the table's changes are held; a snapshot is exported and the table is emptied and
 * copied in it; then the held changes the snapshot did not see are applied, in order, and the
 * table streams again. A crash in between leaves the table marked `backfill`, and the next start
 * copies it before streaming, as for a new table.
 */
export class BackfillCoordinator {
  private readonly gates = new Map<string, Gate>();
  private readonly wakeListeners = new Set<() => void>();
  /** Whether turn() has something to do. */
  needsTurn = false;

  /** Calls `listener` when a backfill has work for the applier (start or finish). */
  readonly onWake = (listener: () => void): (() => void) => {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  };

  constructor(private readonly deps: BackfillDeps) {}

  /** Starts holding the tables' changes; the copy itself starts at the applier's next turn. */
  request(tables: readonly TableSchema[]): void {
    for (const table of tables) {
      const key = tableKey(table);
      if (this.gates.has(key)) continue;
      this.deps.copyGate?.forget(key);
      this.gates.set(key, { table, held: new HeldChanges(), abort: new AbortController(), copied: false });
      this.deps.logger.info({ table: key }, 'backfill requested');
    }
    this.wake();
  }

  get active(): boolean {
    return this.gates.size > 0;
  }

  /** Whether the table of `change` is being backfilled. */
  claims(change: ChangeEvent): boolean {
    return this.gates.has(tableKey(change.table));
  }

  route(change: ChangeEvent): Route {
    const gate = this.gates.get(tableKey(change.table));
    if (!gate) return 'apply';
    if (gate.visibility?.sees(change.xid)) return 'skip';
    gate.held.add(change);
    return 'hold';
  }

  /**
   * Does what must happen between two sink batches: starts the copies asked for, and finishes
   * those done by applying their held changes through `applyHeld`.
   */
  async turn(applyHeld: (changes: ChangeEvent[]) => Promise<void>): Promise<void> {
    this.needsTurn = false;
    for (const [key, gate] of this.gates) {
      if (gate.failure) throw gate.failure;
      if (!gate.copy) await this.startCopy(gate);
      else if (gate.copied) {
        const visibility = gate.visibility as TransactionVisibility;
        for await (const chunk of gate.held.drain(5_000, (c) => !visibility.sees(c.xid)))
          await applyHeld(chunk);
        await pipelineTablesStore.finishSnapshot(
          this.deps.pool,
          this.deps.pipelineId,
          key,
          this.deps.stats.tables.get(key)?.rowsDone ?? 0,
        );
        this.gates.delete(key);
        this.deps.logger.info({ table: key }, 'backfill done');
      }
    }
  }

  async close(): Promise<void> {
    for (const gate of this.gates.values()) {
      gate.abort.abort();
      await gate.copy?.catch(() => undefined);
      await gate.snapshot?.release();
      gate.held.discard();
    }
    this.gates.clear();
  }

  private async startCopy(gate: Gate): Promise<void> {
    const { pool, pipelineId, sink, stats, options } = this.deps;
    const key = tableKey(gate.table);
    gate.snapshot = await this.deps.source.exportSnapshot();
    const planner = await gate.snapshot.openReader();
    let partitions: PartitionPlan;
    try {
      gate.visibility = await planner.visibility();
      partitions = await planner.planPartitions(gate.table, {
        targetRows: options.partitionRows,
        maxPartitions: 1024,
      });
    } finally {
      await planner.close();
    }
    // No change of this table is in flight (they are held), so emptying it here races with nothing.
    await sink.resetTable(gate.table);
    await snapshotPartitionsStore.savePlan(pool, pipelineId, key, partitions.partitions);
    // Once the table streams again, a restart replays from before this copy: its snapshot says what to skip.
    await snapshotPartitionsStore.stamp(
      pool,
      pipelineId,
      key,
      partitions.partitions.map((p) => p.partitionId),
      gate.snapshot.stamp,
    );
    await pipelineTablesStore.startSnapshot(
      pool,
      pipelineId,
      key,
      partitions.partitions.length,
      partitions.rowsEstimate,
    );
    stats.tables.set(key, {
      partitionsTotal: partitions.partitions.length,
      partitionsDone: 0,
      rowsTotal: partitions.rowsEstimate,
      rowsDone: 0,
      startedAtMs: Date.now(),
      rowsAtStart: 0,
      partitions: new Map(),
    });
    gate.copy = runSnapshot({
      snapshot: gate.snapshot,
      jobs: [{ table: gate.table, name: key, partitions: partitions.partitions, done: new Set() }],
      sink,
      stats,
      parallelism: options.parallelism,
      signal: gate.abort.signal,
      logger: this.deps.logger,
      progress: {
        partitionDone: recordPartitionDone(pool, pipelineId),
        // The table streams again only once its held changes are applied, in turn().
        tableDone: async () => {},
      },
    }).then(
      async () => {
        gate.copied = true;
        await gate.snapshot?.release();
        this.wake();
      },
      async (error: unknown) => {
        gate.failure = error;
        await gate.snapshot?.release();
        this.wake();
      },
    );
  }

  private wake(): void {
    this.needsTurn = true;
    for (const listener of [...this.wakeListeners]) listener();
  }
}

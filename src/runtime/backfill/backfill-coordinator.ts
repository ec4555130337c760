import type { DatabasePool } from 'slonik';
import { type ChangeEvent, type Row, type TableSchema, tableKey } from '../../core/change.js';
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
  /** Set for a repair: only these rows are copied again (see requestRepair). */
  repair?: Repair;
  held: HeldChanges;
  visibility?: TransactionVisibility;
  snapshot?: SourceSnapshot;
  abort: AbortController;
  copy?: Promise<void>;
  copied: boolean;
  failure?: unknown;
}

/** A repair of some rows of a table: their keys, what was read of them, and who waits. */
interface Repair {
  keys: string[][];
  /** Changes of the table the applier had gathered before the hold: they go first. */
  earlier: ChangeEvent[];
  /** The rows as the snapshot holds them: an update with the whole row, or a delete. */
  rows?: ChangeEvent[];
  done: () => void;
  failed: (error: unknown) => void;
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
  private readonly afterRepair = new Map<string, TableSchema>();
  private closed = false;
  /** Told once, when a gate is gone (its copy or repair ended). */
  private settleListeners = new Set<() => void>();
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
      // A table whose rows are being repaired is copied once the repair is done.
      if (this.gates.get(key)?.repair) this.afterRepair.set(key, table);
      if (this.gates.has(key)) continue;
      this.deps.copyGate?.forget(key);
      this.gates.set(key, { table, held: new HeldChanges(), abort: new AbortController(), copied: false });
      this.deps.logger.info({ table: key }, 'backfill requested');
    }
    this.wake();
  }

  /**
   * Copies some rows of a table again, while the stream keeps applying: from now on the table's
   * changes are held; a snapshot is exported and the rows of `keys` read in it (a key it does not
   * hold is a row to delete); then the changes gathered before the hold, the rows, and every held
   * change are applied, in that order. The snapshot was taken after the hold began, so the held
   * changes it already saw, applied again over its rows, leave each row as the stream leaves it.
   * Resolves once all of it is written.
   */
  requestRepair(table: TableSchema, keys: string[][]): Promise<void> {
    const key = tableKey(table);
    if (this.gates.has(key)) {
      return Promise.reject(new Error(`${key} is being copied again; repair it once that is done`));
    }
    return new Promise<void>((done, failed) => {
      this.gates.set(key, {
        table,
        repair: { keys, earlier: [], done, failed },
        held: new HeldChanges(),
        abort: new AbortController(),
        copied: false,
      });
      this.deps.logger.info({ table: key, rows: keys.length }, 'repair of rows requested');
      this.wake();
    });
  }

  /**
   * The changes of a batch being gathered that stay in it: a table being copied again drops its own
   * (its copy's snapshot sees them), a table whose rows are repaired keeps them to apply first.
   */
  keepInBatch(changes: readonly ChangeEvent[]): ChangeEvent[] {
    return changes.filter((change) => {
      const gate = this.gates.get(tableKey(change.table));
      if (!gate) return true;
      gate.repair?.earlier.push(change);
      return false;
    });
  }

  /** Resolves once none of `tables` is being copied again (or repaired) any more. */
  async whenCopied(tables: readonly string[]): Promise<void> {
    while (tables.some((t) => this.gates.has(t) || this.afterRepair.has(t))) {
      await new Promise<void>((resolve) => this.settleListeners.add(resolve));
      if (this.closed) throw new Error('the pipeline stopped before the copy was done');
    }
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
    if (!gate.repair && gate.visibility?.sees(change.xid)) return 'skip';
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
      if (gate.repair) {
        await this.repairTurn(key, gate, gate.repair, applyHeld);
        continue;
      }
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
        this.settled(key);
        this.deps.logger.info({ table: key }, 'backfill done');
      }
    }
  }

  private async repairTurn(
    key: string,
    gate: Gate,
    repair: Repair,
    applyHeld: (changes: ChangeEvent[]) => Promise<void>,
  ): Promise<void> {
    if (!gate.copy) {
      gate.copy = this.readRepairRows(gate, repair).then(
        () => {
          gate.copied = true;
          this.wake();
        },
        (error: unknown) => {
          gate.failure = error;
          this.wake();
        },
      );
      return;
    }
    if (!gate.copied && !gate.failure) return;
    // Failed or not, what was held is applied: the table streams on as before.
    const written = gate.failure ? [] : (repair.rows ?? []);
    for (const changes of [repair.earlier, written]) {
      for (let i = 0; i < changes.length; i += 5_000) await applyHeld(changes.slice(i, i + 5_000));
    }
    for await (const chunk of gate.held.drain(5_000, () => true)) await applyHeld(chunk);
    this.settled(key);
    if (gate.failure) {
      this.deps.logger.warn({ table: key, err: gate.failure }, 'repair of rows failed');
      repair.failed(gate.failure);
    } else {
      this.deps.logger.info({ table: key, rows: repair.keys.length }, 'repair of rows done');
      repair.done();
    }
    const next = this.afterRepair.get(key);
    if (next) {
      this.afterRepair.delete(key);
      this.request([next]);
    }
  }

  /** Reads the rows to repair in a snapshot exported now, as changes that write them whole. */
  private async readRepairRows(gate: Gate, repair: Repair): Promise<void> {
    const snapshot = await this.deps.source.exportSnapshot();
    gate.snapshot = snapshot;
    try {
      const reader = await snapshot.openReader();
      try {
        const found = await reader.readRows(gate.table, repair.keys);
        repair.rows = repairChanges(gate.table, repair.keys, found, snapshot.stamp?.lsn ?? '0/0');
      } finally {
        await reader.close();
      }
    } finally {
      await snapshot.release();
    }
  }

  async close(): Promise<void> {
    for (const gate of this.gates.values()) {
      gate.abort.abort();
      await gate.copy?.catch(() => undefined);
      await gate.snapshot?.release();
      gate.held.discard();
      gate.repair?.failed(new Error('the pipeline stopped before the repair was written'));
    }
    this.gates.clear();
    this.afterRepair.clear();
    this.closed = true;
    this.settled('');
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

  private settled(key: string): void {
    this.gates.delete(key);
    const listeners = this.settleListeners;
    this.settleListeners = new Set();
    for (const listener of listeners) listener();
  }

  private wake(): void {
    this.needsTurn = true;
    for (const listener of [...this.wakeListeners]) listener();
  }
}

/** The changes that leave each repaired row as the snapshot holds it: the whole row, or its deletion. */
function repairChanges(
  table: TableSchema,
  keys: readonly string[][],
  rows: readonly Row[],
  lsn: string,
): ChangeEvent[] {
  const id = (values: readonly (string | null)[]) => JSON.stringify(values);
  const found = new Map(rows.map((row) => [id(table.keyColumns.map((k) => row[k] ?? null)), row]));
  const commitTime = new Date().toISOString();
  return keys.map((key) => {
    const row = found.get(id(key));
    const base = { table, commitLsn: lsn, xid: 0, commitTime };
    if (row) return { ...base, op: 'update' as const, after: row };
    return {
      ...base,
      op: 'delete' as const,
      key: Object.fromEntries(table.keyColumns.map((k, i) => [k, key[i] ?? null])),
    };
  });
}

import type { DatabasePool } from 'slonik';
import { type ChangeEvent, type Row, type TableSchema, tableKey } from '../../core/change.js';
import type { Sink } from '../../core/sink.js';
import { SnapshotVisibility } from '../../core/snapshot-visibility.js';
import type { PartitionPlan, Source, SourceSnapshot, TransactionVisibility } from '../../core/source.js';
import type { Logger } from '../../log/logger.js';
import type { SnapshotOptions } from '../../pipelines/snapshot-options.js';
import { pipelineTablesStore } from '../../store/pipeline-tables-store.js';
import { snapshotPartitionsStore } from '../../store/snapshot-partitions-store.js';
import type { PipelineStats } from '../pipeline-stats.js';
import type { CopyGate } from '../snapshot/copy-gate.js';
import type { CopyPace } from '../snapshot/copy-pace.js';
import { runSnapshot } from '../snapshot/snapshot-runner.js';
import { recordPartitionDone } from '../snapshot/snapshot-tables.js';
import { HeldChanges } from './held-changes.js';

/** A table already copied again or repaired, so it cannot also be read at one source position now. */
export class TableBusyError extends Error {
  constructor(readonly table: string) {
    super(`${table} is being copied again or repaired`);
    this.name = 'TableBusyError';
  }
}

/** What the stream applier does with a change of a table. */
export type Route = 'apply' | 'skip' | 'hold';

interface Gate {
  table: TableSchema;
  /** Set for a repair: only these rows are copied again (see requestRepair). */
  repair?: Repair;
  /** Set for a comparison at one source position (see compareAtSourcePosition). */
  check?: Check;
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

/** A comparison of a table's sink rows with the source at one position, while its changes are held. */
interface Check {
  phase: 'start' | 'reading-source' | 'applying-seen' | 'reading-sink' | 'release';
  earlier: ChangeEvent[];
  readSource: () => Promise<{ visibility: string; lsn: bigint }>;
  waitDurable: (lsn: bigint) => Promise<void>;
  readSink: () => Promise<void>;
  done: () => void;
  failed: (error: unknown) => void;
}

/** What a comparison at one source position reads at each side (see compareAtSourcePosition). */
export interface PositionedReads {
  /** Reads the source in a snapshot, and says which transactions it sees and a position past them. */
  readSource: () => Promise<{ visibility: string; lsn: bigint }>;
  /** Resolves once the pipeline has made `lsn` durable. */
  waitDurable: (lsn: bigint) => Promise<void>;
  /** Reads the sink: its table then holds exactly what the source's snapshot held. */
  readSink: () => Promise<void>;
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
  /** How its copies give way to other work (see SnapshotRunOptions). */
  pace?: CopyPace;
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
  /** Per table, how many times a hold of it began or ended: what a verification checks it read across none. */
  private readonly holdChanges = new Map<string, number>();
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
      const gate = this.gates.get(key);
      if (gate?.repair || gate?.check) this.afterRepair.set(key, table);
      if (this.gates.has(key)) continue;
      this.deps.copyGate?.forget(key);
      this.holdMoved(key);
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
  async requestRepair(table: TableSchema, keys: string[][]): Promise<void> {
    const key = tableKey(table);
    if (this.gates.has(key)) throw new Error(`${key} is being copied again; repair it once that is done`);
    // Held changes lie before positions acknowledged meanwhile: a crash before the repair ends
    // must find the table to copy whole at the next start.
    await pipelineTablesStore.markRepairing(this.deps.pool, this.deps.pipelineId, key);
    if (this.gates.has(key)) throw new Error(`${key} is being copied again; repair it once that is done`);
    await new Promise<void>((done, failed) => {
      this.holdMoved(key);
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
   * (its copy's snapshot sees them), a table whose rows are repaired or compared keeps them to apply
   * first.
   */
  keepInBatch(changes: readonly ChangeEvent[]): ChangeEvent[] {
    return changes.filter((change) => {
      const gate = this.gates.get(tableKey(change.table));
      if (!gate) return true;
      (gate.repair ?? gate.check)?.earlier.push(change);
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

  /**
   * A number that changes whenever a hold of the table begins or ends (a backfill, a repair; not a
   * comparison's own); odd while one is under way. A sink read while a table is held lacks its
   * held changes.
   */
  holdGeneration(table: string): number {
    return this.holdChanges.get(table) ?? 0;
  }

  private holdMoved(table: string): void {
    this.holdChanges.set(table, this.holdGeneration(table) + 1);
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
    if (!gate.repair && !gate.check && gate.visibility?.sees(change.xid)) return 'skip';
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
      if (gate.check) {
        await this.checkTurn(key, gate, gate.check, applyHeld);
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
    await pipelineTablesStore.endRepairing(this.deps.pool, this.deps.pipelineId, key);
    this.settled(key);
    if (gate.failure) {
      this.deps.logger.warn({ table: key, err: gate.failure }, 'repair of rows failed');
      repair.failed(gate.failure);
    } else {
      this.deps.logger.info({ table: key, rows: repair.keys.length }, 'repair of rows done');
      repair.done();
    }
    this.queueAfterRepair(key);
  }

  /**
   * Reads a table at both sides at one source position: its changes are held from now on; the
   * source is read in a snapshot; once the pipeline has made that snapshot's position durable,
   * the held changes the snapshot saw are applied, and the sink is read, holding then exactly what
   * the snapshot held; then the other held changes are applied and the table streams on. A crash
   * meanwhile leaves it to be copied whole at the next start, as a repair does.
   */
  async compareAtSourcePosition(table: TableSchema, reads: PositionedReads): Promise<void> {
    const key = tableKey(table);
    if (this.gates.has(key)) throw new TableBusyError(key);
    await pipelineTablesStore.markRepairing(this.deps.pool, this.deps.pipelineId, key);
    if (this.gates.has(key)) throw new TableBusyError(key);
    // Not a hold a verification must know of: it is the verification's own.
    await new Promise<void>((done, failed) => {
      this.gates.set(key, {
        table,
        check: { phase: 'start', earlier: [], ...reads, done, failed },
        held: new HeldChanges(),
        abort: new AbortController(),
        copied: false,
      });
      this.wake();
    });
  }

  private async checkTurn(
    key: string,
    gate: Gate,
    check: Check,
    applyHeld: (changes: ChangeEvent[]) => Promise<void>,
  ): Promise<void> {
    const next = (phase: Check['phase'], work: () => Promise<void>) => {
      check.phase = phase;
      gate.copy = work().then(
        () => {
          check.phase = phase === 'reading-source' ? 'applying-seen' : 'release';
          this.wake();
        },
        (error: unknown) => {
          gate.failure = error;
          check.phase = 'release';
          this.wake();
        },
      );
    };
    if (check.phase === 'start') {
      for (let i = 0; i < check.earlier.length; i += 5_000)
        await applyHeld(check.earlier.slice(i, i + 5_000));
      check.earlier = [];
      next('reading-source', async () => {
        const at = await check.readSource();
        gate.visibility = SnapshotVisibility.parse(at.visibility);
        await check.waitDurable(at.lsn);
      });
    } else if (check.phase === 'applying-seen') {
      const seen = gate.visibility as TransactionVisibility;
      const later = new HeldChanges();
      // A change the snapshot did not see never comes before one it saw of the same row.
      for await (const chunk of gate.held.drain(5_000, () => true)) {
        await applyHeld(chunk.filter((c) => seen.sees(c.xid)));
        for (const change of chunk) if (!seen.sees(change.xid)) later.add(change);
      }
      gate.held = later;
      next('reading-sink', check.readSink);
    } else if (check.phase === 'release') {
      for await (const chunk of gate.held.drain(5_000, () => true)) await applyHeld(chunk);
      await pipelineTablesStore.endRepairing(this.deps.pool, this.deps.pipelineId, key);
      this.settled(key);
      if (gate.failure) check.failed(gate.failure);
      else check.done();
      this.queueAfterRepair(key);
    }
  }

  private queueAfterRepair(key: string): void {
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
        repair.rows = repairChanges(gate.table, repair.keys, found, snapshot.stamp?.lsn ?? 0n);
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
      gate.check?.failed(new Error('the pipeline stopped during the comparison'));
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
    stats.copyStarted(key, {
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
      ...(this.deps.pace ? { pace: this.deps.pace } : {}),
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
    const gate = this.gates.get(key);
    if (this.gates.delete(key) && !gate?.check) this.holdMoved(key);
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
  lsn: bigint,
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

import type { DatabasePool } from 'slonik';
import type { Phase } from '../../machines/pipeline.js';
import { type TableRef, type TableSchema, tableKey } from '../core/change.js';
import { parseLsn } from '../core/lsn.js';
import { FencedError, type Sink } from '../core/sink.js';
import type { Source, SourceSnapshot } from '../core/source.js';
import {
  SlotMissingError,
  SourceCleanupError,
  SourceNotReadyError,
  TableNotReplicableError,
} from '../core/source-errors.js';
import type { SinkComparison, SourceComparison } from '../core/table-comparison.js';
import { AppError, validationFailed } from '../errors/app-error.js';
import type { Logger } from '../log/logger.js';
import { resolveSnapshotOptions } from '../pipelines/snapshot-options.js';
import { parseTableName } from '../pipelines/table-name.js';
import { type PipelineTableRow, pipelineTablesStore } from '../store/pipeline-tables-store.js';
import { type PipelineRow, pipelinesStore } from '../store/pipelines-store.js';
import { resyncStore } from '../store/resync-store.js';
import { schemaStore } from '../store/schema-store.js';
import { abortWith } from './abort-link.js';
import { BackfillCoordinator, type PositionedReads } from './backfill/backfill-coordinator.js';
import {
  checkDefinition,
  type DefinitionCheckOutcome,
  type DefinitionToCheck,
  PREFLIGHT_CONNECT_TIMEOUT_MS,
} from './definition-checks.js';
import { DroppedTables, describeKeptTables, MISSING_REASON } from './dropped-tables.js';
import { isUnreachable, messageOf } from './error-kinds.js';
import { refuseOwnSourceAsSink } from './own-source-guard.js';
import {
  type ConnectionResolver,
  connected,
  PipelineEndpoints,
  type Resolved,
} from './pipeline-endpoints.js';
import type { PipelineStats } from './pipeline-stats.js';
import { SchemaGuard } from './schema-guard.js';
import { readsSharedStream, SharedStreams, withMemberPositions } from './shared-stream/shared-streams.js';
import type { StreamClaim, StreamGroup } from './shared-stream/stream-group.js';
import type { StreamSubscription } from './shared-stream/stream-subscription.js';
import { restoreColumnsForCopy } from './sink-column-restore.js';
import { SinkTableChangedError } from './sink-table-changed.js';
import { checkCopiedTables, copiedShapes } from './sink-table-check.js';
import { watchSlot } from './slot-monitor.js';
import { CopyGate } from './snapshot/copy-gate.js';
import { snapshotTables } from './snapshot/snapshot-tables.js';
import { type ApplyOutcome, applyStream } from './stream-applier.js';
import { watchTables } from './table-monitor.js';

/** How the supervisor reaches into a running data plane. */
export interface RunControl {
  /** Fencing epoch of this worker's lease on the pipeline, written with every checkpoint. */
  epoch?: number;
  /** Set while streaming: copies these tables (`schema.table`) again while the others stream. */
  backfill?: (tables: readonly string[]) => Promise<void>;
  /** What the data plane is waiting on now, for a stop that takes long to say where. */
  step?: string;
  /** Set while streaming: what a verification of the sink against the source reads and waits on. */
  verification?: VerifiableRun;
}

/** A streaming pipeline, as a verification sees it. */
export interface VerifiableRun {
  source: SourceComparison;
  /** The sink's side; undefined for a sink that cannot be read back. */
  sink(): Promise<SinkComparison | undefined>;
  /** The tables it streams, in the shapes it writes them with. */
  tables(): TableSchema[];
  /** Where the sink is durable; null when not known yet. */
  durable(): bigint | null;
  /** Copies the rows of `keys` of a table again while the stream applies (see BackfillCoordinator.requestRepair). */
  repair(table: TableSchema, keys: string[][]): Promise<void>;
  /** Copies whole tables again (a backfill); resolves once they stream again. */
  copyAgain(tables: string[]): Promise<void>;
  /** Changes whenever a hold of the table (`schema.table`) begins or ends; odd while one is under way. */
  holdGeneration(table: string): number;
  /** Reads a table at both sides at one source position (see BackfillCoordinator.compareAtSourcePosition). */
  compareAtSourcePosition(table: TableSchema, reads: PositionedReads): Promise<void>;
}

export interface RunnerDeps {
  pool: DatabasePool;
  resolveConnection: ConnectionResolver;
  logger: Logger;
  /** Retained WAL of a slot above which its pipeline shows a warning. */
  warnRetainedWalBytes?: number;
  /** This process's spool directory (spool-root.ts); the OS temp directory when unset. */
  spoolDir?: string;
  /** How often a replication connection reports its position when nothing else does (source_status_interval). */
  statusIntervalMs?: number;
  /** WAL a pipeline of a shared stream that does not read it may hold (shared_stream_hold_wal); 1 GiB when unset. */
  sharedStreamHoldWalBytes?: number;
  /** Rows per second a copy goes while others read its shared stream (shared_stream_copy_rate); 0: no limit. */
  sharedStreamCopyRowsPerSecond?: number;
}

/** 10 GiB: a day of a busy database's WAL, long before most disks fill. */
const DEFAULT_WARN_RETAINED_WAL_BYTES = 10 * 1024 ** 3;

export type { ConnectionResolver, DefinitionCheckOutcome, DefinitionToCheck };

/**
 * The data plane of a pipeline: checks and prepares the source and sink, snapshots the tables
 * not yet copied, then applies the change stream until told to stop. Every start reads the
 * definition afresh, which is how a changed definition is picked up without a process restart.
 */
export class ReplicationRunner {
  private readonly endpoints: PipelineEndpoints;
  /** The source streams this process's pipelines share. */
  readonly streams: SharedStreams;

  constructor(private readonly deps: RunnerDeps) {
    this.endpoints = new PipelineEndpoints(deps);
    this.streams = new SharedStreams({
      pool: deps.pool,
      logger: deps.logger,
      holdWalBytes: deps.sharedStreamHoldWalBytes ?? 1024 ** 3,
      ...(deps.spoolDir ? { spoolDir: deps.spoolDir } : {}),
      ...(deps.statusIntervalMs ? { statusIntervalMs: deps.statusIntervalMs } : {}),
    });
  }

  /** The shared stream `name` a pipeline reads, or undefined for one with a slot of its own. */
  private streamOf(row: PipelineRow, name: string | undefined): StreamGroup | undefined {
    if (!name) return undefined;
    return this.streams.of(name, row, () =>
      this.endpoints.openStreamSource(row.project_id, row.source_connection, name),
    );
  }

  /** Makes the pipeline's changes feed carry `tables`: its shared stream's (with the others' tables), or its own. */
  private publish(resolved: Resolved, source: Source, tables: readonly TableRef[]): Promise<void> {
    const group = this.streamOf(resolved.row, resolved.stream);
    if (group) return this.streams.publish(resolved.row, group, source, tables);
    return source.publish(resolved.row.id, tables);
  }

  /** The pipeline's subscription to its shared stream, its tables from `from` on. */
  private subscribe(group: StreamGroup, resolved: Resolved, sink: Sink, from: bigint, copying: boolean) {
    return group.subscribe(resolved.row.id, new Set(resolved.tables.map(tableKey)), from, {
      // A large transaction is written while it arrives into a sink that can hold it open.
      live: sink.openHeldTransaction !== undefined,
      copying,
    });
  }

  /** Checks the source and sink and creates what the pipeline owns; throws what a person must fix. */
  async prepare(pipelineId: string): Promise<void> {
    const resolved = await this.endpoints.resolve(pipelineId);
    const source = await this.endpoints.openPipelineSource(resolved);
    try {
      await this.prepareWith(source, resolved);
    } catch (error) {
      if (error instanceof SinkTableChangedError) await this.noteSinkChanged(resolved, error);
      throw named(error, resolved);
    } finally {
      await source.close();
    }
  }

  private async prepareWith(source: Source, resolved: Resolved): Promise<void> {
    const pipelineId = resolved.row.id;
    await source.checkReady();
    const { schemas, rows: tableRows } = await this.keptTables(source, resolved);
    await source.checkAccess(schemas, pipelineId);
    await pipelinesStore.markSourcePrepared(this.deps.pool, pipelineId);
    await this.publish(resolved, source, schemas);
    // A start of a pipeline whose slot is gone fails at once, saying so, whatever its sink's state.
    if (!(await resyncStore.requested(this.deps.pool, pipelineId))) {
      await this.requireKeptSlot(source, resolved.row, tableRows);
    }
    // The shapes the sink has: a change of the source still under review is not the sink's yet.
    const shapes = await this.knownShapes(pipelineId, schemas, tableRows);
    const sink = this.endpoints.createSink(resolved);
    try {
      await this.checkSinkTables(resolved, sink, source, shapes.known, tableRows);
      await sink.open([...shapes.known.values()]);
    } finally {
      await sink.close();
    }
  }

  /**
   * Runs until `signal` aborts; reports phases through `onPhase`. A slot found gone or invalidated
   * fails it with the way out, a resync, named for this pipeline.
   */
  async run(
    pipelineId: string,
    stats: PipelineStats,
    signal: AbortSignal,
    onPhase: (phase: Phase) => void,
    control: RunControl = {},
  ): Promise<ApplyOutcome> {
    const resolved = await this.endpoints.resolve(pipelineId);
    try {
      return await this.replicate(resolved, stats, signal, onPhase, control);
    } catch (error) {
      if (error instanceof SinkTableChangedError) await this.noteSinkChanged(resolved, error);
      throw named(error, resolved);
    }
  }

  private async replicate(
    resolved: Resolved,
    stats: PipelineStats,
    signal: AbortSignal,
    onPhase: (phase: Phase) => void,
    control: RunControl,
  ): Promise<ApplyOutcome> {
    const pipelineId = resolved.row.id;
    const log = this.deps.logger.child({ pipeline: resolved.row.name });
    const source = await this.endpoints.openPipelineSource(resolved);
    let sink: Sink | undefined;
    // The snapshot of a slot just created, held until the tables are copied in it.
    let slotSnapshot: SourceSnapshot | undefined;
    const group = this.streamOf(resolved.row, resolved.stream);
    // A shared stream read while the tables are copied (see below).
    let early: StreamSubscription | undefined;
    const publish = (tables: readonly TableRef[]) => this.publish(resolved, source, tables);
    try {
      // What `prepare` checks and creates, again at every start of the data plane: a pipeline
      // restored as running (after a restart, or taken over from a worker that died) never went
      // through `prepare` in this process, and the source may have changed since.
      control.step = 'checking the source';
      // The sink's connection may have been repointed since: checked on a connection of its own
      // while the source is checked, and awaited before the sink is opened.
      const ownSourceRefused = this.refuseOwnSource(source, resolved);
      ownSourceRefused.catch(() => undefined);
      await source.checkReady();
      // A repair a crash cut short held changes it had acknowledged: those tables are copied again.
      await pipelineTablesStore.backfillRepairing(this.deps.pool, pipelineId);
      const kept = await this.keptTables(source, resolved);
      const { schemas } = kept;
      let tableRows = kept.rows;
      await source.checkAccess(schemas, pipelineId);
      // Before the publication: a deletion drops what the source holds only when this is set.
      await pipelinesStore.markSourcePrepared(this.deps.pool, pipelineId);
      // A resync starts from a new slot: the old one, if it still exists, goes first.
      const resync = await resyncStore.requested(this.deps.pool, pipelineId);
      if (resync && !group) {
        log.info('resync: dropping the old slot, if any, to create a new one');
        await source.dropOwned(pipelineId);
      } else if (resync && (await slotGone(source, pipelineId))) {
        // A shared slot is only made again when it is gone: the others read it too, and lost what
        // the old one held for them, so they copy their tables again.
        log.info('resync: the shared stream’s slot is gone or invalidated: dropping it to create a new one');
        await source.dropOwned(pipelineId);
      }
      // The tables the changes feed carries in this run: a dropped one comes back with a backfill.
      let published: TableRef[] = schemas;
      await publish(published);
      // Before the sink is opened: a slot that is gone fails the pipeline even while the sink is down.
      if (!resync) await this.requireKeptSlot(source, resolved.row, tableRows);
      const shapes = await this.knownShapes(pipelineId, schemas, tableRows);
      await ownSourceRefused;
      sink = this.endpoints.createSink(resolved);
      control.step = 'opening the sink';
      await this.checkSinkTables(resolved, sink, source, shapes.known, tableRows);
      // From here on this run writes the sink: what its tables hold is known again at a clean end.
      await pipelineTablesStore.forgetSinkRows(this.deps.pool, pipelineId);
      await sink.open([...shapes.known.values()]);
      const checkpoint = await sink.readCheckpoint();
      // This worker holds the pipeline's lease, so the slot is its own to claim. A slot is created
      // only for a pipeline that never streamed: recreating one later would skip changes.
      // A resync may create one too: every table is copied again, from the new slot's snapshot.
      control.step = 'claiming the slot';
      // Where a pipeline of a shared stream that never checkpointed claimed it before: a copy it
      // began then resumes from there (the stream never let that position go, unless it let the
      // pipeline go).
      const claimedBefore =
        group && checkpoint === null
          ? await pipelinesStore.streamPositionOf(this.deps.pool, pipelineId)
          : null;
      const claimOptions = {
        mayCreate: resync || (checkpoint === null && !tableRows.some((t) => t.status === 'streaming')),
        logger: log,
      };
      const claim: StreamClaim = group
        ? await group.claim(pipelineId, source, claimOptions)
        : await source.claimSlot(pipelineId, claimOptions);
      slotSnapshot = claim.snapshot;
      if (resync) await resyncStore.done(this.deps.pool, pipelineId);
      // A new slot's snapshot holds everything before its position, whatever the sink had before.
      let startPosition = slotSnapshot ? claim.position : (checkpoint?.lsn ?? claim.position);
      const released =
        group !== undefined && (await pipelinesStore.isStreamReleased(this.deps.pool, pipelineId));
      // A copy under way, resumed where its stream started before; any other copy starts afresh.
      let copyAfresh = group !== undefined && checkpoint === null;
      if (group && !released && !slotSnapshot && claimedBefore && parseLsn(claimedBefore) >= claim.position) {
        startPosition = parseLsn(claimedBefore);
        copyAfresh = false;
      }
      // Read on from where the pipeline acknowledged, past what it decided on without writing
      // (a transaction its table's copy carried would otherwise come again, with its older shape).
      if (!released && checkpoint !== null && claim.acknowledged && claim.acknowledged > startPosition) {
        startPosition = claim.acknowledged;
      }
      if (released) {
        // The shared stream let this pipeline go (it held more WAL than allowed while away, or the
        // slot was made again): what it missed is gone from the source, so its tables are copied again.
        log.warn(
          { checkpoint: String(startPosition), stream: String(claim.position) },
          'the shared stream went on without this pipeline: copying its tables again',
        );
        const copied = tableRows.filter((t) => t.status === 'streaming' || t.status === 'backfill');
        await pipelineTablesStore.markBackfill(
          this.deps.pool,
          pipelineId,
          copied.map((t) => t.table_name),
        );
        await pipelinesStore.clearStreamRelease(this.deps.pool, pipelineId);
        tableRows = await pipelineTablesStore.list(this.deps.pool, pipelineId);
        if (claim.position > startPosition) startPosition = claim.position;
      }

      // A copy beside pipelines reading the same stream goes at the pace that keeps them on time.
      const copyPace = group?.copyPace(pipelineId, this.deps.sharedStreamCopyRowsPerSecond ?? 0);
      const pending = schemas.filter(
        (s) => tableRows.find((t) => t.table_name === tableKey(s))?.status !== 'streaming',
      );
      // Every table copied from a snapshot taken from here on: a pipeline of a shared stream reads
      // it while it copies, from where it is now, and joins it without making it restart.
      if (group && copyAfresh && !slotSnapshot && pending.length > 0 && pending.length === schemas.length) {
        early = this.subscribe(group, resolved, sink, group.joinPosition(startPosition), true);
        startPosition = early.position;
      }
      if (pending.length > 0) {
        onPhase('snapshot');
        control.step = 'copying tables';
        await snapshotTables({
          pool: this.deps.pool,
          pipelineId,
          projectId: resolved.row.project_id,
          source,
          slotSnapshot,
          // A shared stream moved on while a copy of this pipeline was under way: it starts again.
          copyAfresh,
          tables: pending,
          sink,
          stats,
          options: resolveSnapshotOptions(resolved.row.snapshot_options),
          ...(copyPace ? { pace: copyPace } : {}),
          signal,
          logger: log,
        });
        // Everything up to the slot's start position is in the sink now: that is a checkpoint.
        if (!signal.aborted) stats.recordCheckpoint(startPosition);
      }
      await slotSnapshot?.release();
      slotSnapshot = undefined;
      if (signal.aborted) return 'stopped';
      if (early) group?.copied(early);

      // What copies made in snapshots newer than the stream's start already hold (see CopyGate).
      const copyGate = await CopyGate.load(
        this.deps.pool,
        pipelineId,
        [...shapes.known.values()],
        startPosition,
      );
      const backfill = new BackfillCoordinator({
        pool: this.deps.pool,
        pipelineId,
        source,
        sink,
        stats,
        options: resolveSnapshotOptions(resolved.row.snapshot_options),
        logger: log,
        copyGate,
        ...(copyPace ? { pace: copyPace } : {}),
      });
      const dropped = await DroppedTables.load(
        { pool: this.deps.pool, pipelineId, stats, logger: log },
        tableRows,
      );
      control.backfill = async (tables) => {
        const back = tables.filter((t) => dropped.has(t));
        if (back.length > 0) {
          // A table dropped and created again under its name: a new table for the changes feed,
          // which must carry it before the copy's snapshot is taken, so that no change falls between.
          const created = await source.describeTables(back.map((t) => parseTableName(t) as TableRef));
          published = [...published.filter((p) => !back.includes(tableKey(p))), ...created];
          await publish(published);
          for (const schema of created) {
            shapes.known.set(tableKey(schema), schema);
            shapes.sourceOnly.delete(tableKey(schema));
            await schemaStore.setKnown(this.deps.pool, pipelineId, tableKey(schema), schema);
          }
          dropped.restore(back);
        }
        backfill.request([...shapes.known.values()].filter((s) => tables.includes(tableKey(s))));
      };
      const opened = sink;
      control.verification = {
        source: source.comparison(),
        sink: async () => opened.comparison?.(),
        tables: () => [...shapes.known.values()],
        durable: () => stats.durablePosition(),
        repair: (table, keys) => backfill.requestRepair(table, keys),
        holdGeneration: (table) => backfill.holdGeneration(table),
        compareAtSourcePosition: (table, reads) => backfill.compareAtSourcePosition(table, reads),
        copyAgain: async (tables) => {
          await pipelineTablesStore.markBackfill(this.deps.pool, pipelineId, tables);
          await control.backfill?.(tables);
          await backfill.whenCopied(tables);
        },
      };
      const schema = new SchemaGuard({
        pool: this.deps.pool,
        pipelineId,
        projectId: resolved.row.project_id,
        policy: resolved.row.schema_policy,
        sink,
        source,
        known: shapes.known,
        sourceOnly: shapes.sourceOnly,
        logger: log,
        requestBackfill: async (table) => {
          await pipelineTablesStore.markBackfill(this.deps.pool, pipelineId, [tableKey(table)]);
          backfill.request([table]);
        },
      });
      onPhase('streaming');
      control.step = 'streaming';
      // Every change committed so far lies before this: a stream idle past it has caught up.
      const caughtUpAt = await source.walPosition();
      const stream =
        early ??
        (group
          ? this.subscribe(group, resolved, sink, startPosition, false)
          : source.startStream(pipelineId, {
              from: startPosition,
              logger: log,
              ...(this.deps.spoolDir ? { spoolDir: this.deps.spoolDir } : {}),
              ...(this.deps.statusIntervalMs ? { statusIntervalMs: this.deps.statusIntervalMs } : {}),
              // A large transaction is written while it arrives into a sink that can hold it open.
              live: sink.openHeldTransaction !== undefined,
            }));
      // A large transaction still arriving counts in the lag before the applier sees any of it,
      // and failed status updates (the source keeping its WAL) are exported.
      stats.streamOpened(() => stream.stats());
      // Stops the stream for the caller's abort, and for a slot found lost while streaming.
      const { controller: streaming, unlink } = abortWith(signal);
      let slotLost: SlotMissingError | undefined;
      const stopWatching = watchSlot({
        source,
        pipelineId,
        stats,
        warnRetainedWalBytes: this.deps.warnRetainedWalBytes ?? DEFAULT_WARN_RETAINED_WAL_BYTES,
        onLost: (error) => {
          slotLost = error;
          streaming.abort();
        },
        logger: log,
      });
      const stopWatchingTables = watchTables({
        source,
        pipelineId,
        tables: () => dropped.without(published),
        onGone: (gone) => dropped.mark(gone),
        logger: log,
      });
      let endedCleanly = false;
      try {
        const outcome = await applyStream({
          next: () => stream.next(),
          ack: (lsn) => {
            stats.acknowledged(lsn);
            stream.ack(lsn);
          },
          sink,
          limits: this.endpoints.batchLimits(resolved),
          epoch: control.epoch ?? 1,
          startLsn: startPosition,
          caughtUpAt,
          tables: new Set(resolved.tables.map(tableKey)),
          stats,
          signal: streaming.signal,
          logger: log,
          backfill,
          copyGate,
          copyAgain: (ref) => {
            const table = shapes.known.get(tableKey(ref));
            if (!table) return;
            log.warn(
              { table: tableKey(ref) },
              'a truncate part of a resumed copy holds: copying the table again',
            );
            backfill.request([table]);
            void pipelineTablesStore
              .markBackfill(this.deps.pool, pipelineId, [tableKey(table)])
              .catch((error: unknown) => log.warn({ err: error }, 'could not note the backfill'));
          },
          schema,
        });
        if (slotLost) throw slotLost;
        endedCleanly = true;
        return outcome;
      } catch (error) {
        // A batch the sink refused or failed may be a table changed behind the pipeline's back.
        throw await this.sinkTableChangedOr(error, resolved, sink, source, shapes.known);
      } finally {
        stopWatching();
        stopWatchingTables();
        unlink();
        stats.clearWarnings();
        stats.streamClosed();
        control.backfill = undefined;
        control.verification = undefined;
        control.step = 'ending the backfill and the stream';
        await backfill.close();
        await stream.close();
        if (endedCleanly) await this.noteSinkRows(resolved, sink, shapes.known, log);
      }
    } finally {
      await early?.close();
      group?.release(pipelineId);
      stats.endRun();
      control.step = 'closing the sink and the source';
      await slotSnapshot?.release();
      await sink?.close();
      await source.close();
      control.step = undefined;
    }
  }

  /**
   * Before the sink is opened, which would create a table found gone again, empty: fails the
   * pipeline for a copied table changed behind its back, and gives a table about to be copied
   * again the columns dropped from it by hand.
   */
  private async checkSinkTables(
    resolved: Resolved,
    sink: Sink,
    source: Source,
    shapes: ReadonlyMap<string, TableSchema>,
    rows: readonly PipelineTableRow[],
  ): Promise<void> {
    await checkCopiedTables({ pipeline: resolved.row.name, sink, source, shapes, rows });
    await restoreColumnsForCopy(sink, shapes, rows);
  }

  /**
   * The SinkTableChangedError a failure of the stream comes from, when a sink table whose copy is
   * done changed; else the failure itself (also when the sink cannot be looked at now).
   */
  private async sinkTableChangedOr(
    error: unknown,
    resolved: Resolved,
    sink: Sink,
    source: Source,
    shapes: ReadonlyMap<string, TableSchema>,
  ): Promise<unknown> {
    // A server out of reach is retried, and the retry's start looks at the tables anyway.
    if (error instanceof FencedError || error instanceof SlotMissingError || isUnreachable(error))
      return error;
    try {
      const rows = await pipelineTablesStore.list(this.deps.pool, resolved.row.id);
      await checkCopiedTables({ pipeline: resolved.row.name, sink, source, shapes, rows });
    } catch (found) {
      if (found instanceof SinkTableChangedError) return found;
    }
    return error;
  }

  /**
   * Notes whether each copied table's sink table holds rows, once the data plane stopped writing:
   * the next start tells a table emptied behind the pipeline's back by it.
   */
  private async noteSinkRows(
    resolved: Resolved,
    sink: Sink,
    shapes: ReadonlyMap<string, TableSchema>,
    log: Logger,
  ): Promise<void> {
    if (!sink.inspectTargets) return;
    try {
      const rows = await pipelineTablesStore.list(this.deps.pool, resolved.row.id);
      const states = await sink.inspectTargets(copiedShapes(rows, shapes));
      await pipelineTablesStore.noteSinkRows(
        this.deps.pool,
        resolved.row.id,
        states.filter((s) => s.exists).map((s) => ({ table: tableKey(s.table), hasRows: !s.empty })),
      );
    } catch (error) {
      // Not known then: the next start does not look for a table emptied by hand.
      log.warn({ err: error }, 'could not note which sink tables hold rows');
    }
  }

  /** The tables' progress shows what is wrong with their sink tables until a backfill copies them again. */
  private async noteSinkChanged(resolved: Resolved, error: SinkTableChangedError): Promise<void> {
    const changes = error.changes.map((c) => ({ table: tableKey(c.table), problem: c.problem }));
    await pipelineTablesStore
      .markSinkChanged(this.deps.pool, resolved.row.id, changes)
      .catch((e: unknown) =>
        this.deps.logger.warn(
          { err: e, pipeline: resolved.row.name },
          'could not note the changed sink tables',
        ),
      );
  }

  /**
   * The source connection of a pipeline as stored now: `key` is equal for pipelines that read the
   * same source with the same settings (one session serves them all), `open` connects to it.
   */
  async sourceOf(pipelineId: string): Promise<{ key: string; open: () => Promise<Source> }> {
    const row = await pipelinesStore.findById(this.deps.pool, pipelineId);
    if (!row) throw new AppError('NOT_FOUND', `pipeline ${pipelineId} does not exist`);
    const connection = await this.endpoints.connection(
      row.project_id,
      row.source_connection,
      'source.connection',
    );
    const group = this.streamOf(row, await this.endpoints.streamName(row));
    if (!group) {
      return {
        key: JSON.stringify([connection.type, connection.settings]),
        open: () =>
          connected(this.endpoints.createSource(connection), { timeoutMs: PREFLIGHT_CONNECT_TIMEOUT_MS }),
      };
    }
    // A pipeline of a shared stream stands where it is in the stream, not where the slot is (the
    // smallest position of all its pipelines).
    return {
      key: JSON.stringify([connection.type, connection.settings, group.name]),
      open: async () =>
        withMemberPositions(
          await connected(this.endpoints.createSource(connection, { stream: group.name }), {
            timeoutMs: PREFLIGHT_CONNECT_TIMEOUT_MS,
          }),
          group,
        ),
    };
  }

  /**
   * Checks a definition against the servers before it is stored or started (see
   * definition-checks); for an existing pipeline (`pipelineId`), its dropped tables are not refused.
   * `resolveConnection` finds the connections instead of the store's (a document's, not yet written).
   */
  async checkDefinition(
    projectId: string,
    definition: DefinitionToCheck,
    pipelineId?: string,
    resolveConnection?: ConnectionResolver,
  ): Promise<DefinitionCheckOutcome> {
    const rows = pipelineId ? await pipelineTablesStore.list(this.deps.pool, pipelineId) : [];
    const endpoints = resolveConnection
      ? new PipelineEndpoints({ pool: this.deps.pool, resolveConnection })
      : this.endpoints;
    return checkDefinition(endpoints, projectId, definition, rows, pipelineId);
  }

  /**
   * Checks that tables shown dropped exist at the source again, before they are backfilled.
   * @throws AppError 422 on `tables` naming each one that cannot be replicated, 502 when the source cannot be reached.
   */
  async checkTablesBack(pipelineId: string, tables: readonly string[]): Promise<void> {
    const resolved = await this.endpoints.resolve(pipelineId);
    let source: Source;
    try {
      source = await this.endpoints.openPipelineSource(resolved);
    } catch (error) {
      throw new AppError(
        'SOURCE_UNAVAILABLE',
        `cannot reach the source to check ${tables.join(', ')}: ${messageOf(error)}`,
      );
    }
    try {
      await source.describeTables(tables.map((t) => parseTableName(t) as TableRef));
    } catch (error) {
      if (error instanceof TableNotReplicableError) {
        throw validationFailed(
          'tables',
          `${error.message}\n(a table dropped at the source is copied again once it is created again there)`,
        );
      }
      throw error;
    } finally {
      await source.close();
    }
  }

  /** Runs an approved schema change on the pipeline's sink. */
  async applySchemaChange(
    pipelineId: string,
    proposed: TableSchema,
    statements: readonly string[],
  ): Promise<{ skipped: string[] }> {
    const resolved = await this.endpoints.resolve(pipelineId);
    const sink = this.endpoints.createSink(resolved);
    try {
      return await sink.applySchemaChange(proposed, statements);
    } finally {
      await sink.close();
    }
  }

  /** Drops what the pipeline owns at its source. @throws SourceCleanupError naming it, and how to drop it by hand. */
  async dropSourceObjects(pipelineId: string): Promise<void> {
    if (!(await pipelinesStore.isSourcePrepared(this.deps.pool, pipelineId))) return;
    const row = await pipelinesStore.findById(this.deps.pool, pipelineId);
    if (!row) return;
    // A shared stream's slot and publication go with its last pipeline.
    if (readsSharedStream(row) && (await this.streams.othersExist(row))) {
      await this.withdrawFromStream(row);
      return;
    }
    const source = await this.sourceOfRow(row, await this.endpoints.streamName(row));
    try {
      await source.connect();
      await source.dropOwned(pipelineId);
    } catch (error) {
      throw new SourceCleanupError(source.ownedObjects(pipelineId), messageOf(error), { cause: error });
    } finally {
      await source.close();
    }
  }

  /**
   * Takes a deleted pipeline's tables out of its shared stream's publication. Its deletion does not
   * wait on this: the tables cost the source sending their changes, not data; the next start of another
   * pipeline of the stream sets the publication to theirs as well.
   */
  private async withdrawFromStream(row: PipelineRow): Promise<void> {
    let source: Source | undefined;
    let name: string | undefined;
    try {
      name = await this.endpoints.streamName(row);
      const group = this.streamOf(row, name);
      if (!group) return;
      source = await this.sourceOfRow(row, name);
      await source.connect();
      await this.streams.withdraw(row, group, source);
    } catch (error) {
      this.deps.logger.warn(
        { err: error, pipeline: row.name, stream: name },
        'cannot take the deleted pipeline’s tables out of the shared stream’s publication; the next start of another of its pipelines does',
      );
    } finally {
      await source?.close();
    }
  }

  /**
   * A session on a pipeline's source connection, for its slot and publication (its stream's when
   * `stream` is set), from the stored row alone: a deletion needs no more of its definition.
   */
  private async sourceOfRow(row: PipelineRow, stream: string | undefined): Promise<Source> {
    const resolved = await this.deps.resolveConnection(row.project_id, row.source_connection);
    return this.endpoints.createSource(resolved, this.endpoints.sourceOptions(row, stream));
  }

  /**
   * Fails with SlotMissingError when a pipeline that streamed has lost its slot: looked at before
   * the sink is opened, so that a lost slot is not hidden behind a sink that cannot be reached
   * (retried for ever) when nothing but a resync can bring the pipeline back.
   */
  private async requireKeptSlot(
    source: Source,
    row: PipelineRow,
    tableRows: readonly PipelineTableRow[],
  ): Promise<void> {
    const streamed =
      row.last_checkpoint_lsn !== null ||
      tableRows.some((t) => t.status === 'streaming' || t.status === 'backfill');
    if (streamed) await source.slotStatus(row.id);
  }

  private refuseOwnSource(source: Source, resolved: Resolved): Promise<void> {
    return refuseOwnSourceAsSink(
      source,
      resolved.tables,
      {
        type: resolved.sink.type,
        connection: resolved.sink.settings,
        properties: resolved.row.sink_properties,
      },
      PREFLIGHT_CONNECT_TIMEOUT_MS,
    );
  }

  /**
   * The shape the sink has of each table: the stored one for a table already copied, the
   * source's current one for a table about to be copied (which the copy then gives the sink).
   */
  private async knownShapes(
    pipelineId: string,
    catalog: TableSchema[],
    tableRows: readonly PipelineTableRow[],
  ) {
    const stored = await schemaStore.tableSchemas(this.deps.pool, pipelineId);
    const known = new Map<string, TableSchema>();
    const sourceOnly = new Map<string, TableSchema>();
    // A dropped table keeps the shape the sink has: its changes from before the drop may still come.
    for (const row of stored) {
      const dropped = tableRows.find((t) => t.table_name === row.table_name)?.status === 'dropped';
      if (dropped && row.known_schema) known.set(row.table_name, row.known_schema);
    }
    for (const schema of catalog) {
      const name = tableKey(schema);
      const row = stored.find((r) => r.table_name === name);
      const copied = tableRows.find((t) => t.table_name === name)?.status === 'streaming';
      if (copied && row?.known_schema) {
        known.set(name, row.known_schema);
        if (row.source_schema) sourceOnly.set(name, row.source_schema);
      } else {
        known.set(name, schema);
        await schemaStore.setKnown(this.deps.pool, pipelineId, name, schema);
      }
    }
    return { known, sourceOnly };
  }

  /**
   * The tables of the definition the source still has, with their schemas, and the pipeline's
   * table rows. A table copied before and gone from the source now (dropped, renamed, or dropped
   * and created again while the pipeline did not run) is marked dropped instead of failing the start.
   */
  private async keptTables(source: Source, resolved: Resolved) {
    const { pool } = this.deps;
    let rows = await this.syncTables(resolved);
    const streaming = resolved.tables.filter(
      (t) => rows.find((r) => r.table_name === tableKey(t))?.status === 'streaming',
    );
    const gone = await source.goneTables(resolved.row.id, streaming);
    const goneNames = new Set(gone.map((g) => tableKey(g.table)));
    const { schemas, missing } = await describeKeptTables(
      source,
      resolved.tables.filter((t) => !goneNames.has(tableKey(t))),
      rows,
    );
    const found = [...gone, ...missing.map((table) => ({ table, reason: MISSING_REASON }))];
    for (const { table, reason } of found) {
      await pipelineTablesStore.markDropped(pool, resolved.row.id, tableKey(table), reason);
    }
    if (found.length > 0) rows = await pipelineTablesStore.list(pool, resolved.row.id);
    return { schemas, rows };
  }

  private async syncTables(resolved: Resolved) {
    await pipelineTablesStore.sync(
      this.deps.pool,
      resolved.row.id,
      resolved.row.project_id,
      resolved.row.source_tables,
    );
    return pipelineTablesStore.list(this.deps.pool, resolved.row.id);
  }
}

/** Whether the pipeline's slot is gone from the source, or invalidated. */
const slotGone = (source: Source, pipelineId: string): Promise<boolean> =>
  source.slotStatus(pipelineId).then(
    () => false,
    (error: unknown) => {
      if (error instanceof SlotMissingError) return true;
      throw error;
    },
  );

/**
 * A lost slot's error names the pipeline in the command that resyncs it, a source not ready its
 * connection; any other error is as it was.
 */
function named(error: unknown, resolved: Resolved): unknown {
  if (error instanceof SlotMissingError && error.pipeline === undefined)
    return error.forPipeline(resolved.row.name);
  if (error instanceof SourceNotReadyError && error.connection === undefined) {
    return error.forConnection(resolved.row.source_connection);
  }
  return error;
}

import type pg from 'pg';
import { type TableRef, type TableSchema, tableKey } from '../../core/change.js';
import type { ChangeStream, SourceRelation } from '../../core/change-stream.js';
import { formatLsn, parseLsn } from '../../core/lsn.js';
import type {
  ReadinessCheck,
  SlotClaim,
  SlotPosition,
  SlotStatus,
  Source,
  SourceKind,
  SourceLogger,
  SourceOptions,
  SourcePositions,
  SourceSnapshot,
  StreamOptions,
} from '../../core/source.js';
import { SlotMissingError } from '../../core/source-errors.js';
import {
  checkSourceReady,
  databaseIdentity,
  listTables,
  readTableSchemas,
  sourceReadiness,
} from './catalog.js';
import { startChangeStream } from './change-stream.js';
import { goneTables } from './gone-tables.js';
import type { RelationInfo } from './pgoutput-decoder.js';
import { checkPrivileges } from './privileges.js';
import { existingValues, schemasFromRelations } from './relation-schema.js';
import { acquireSessionLease, type SessionLease } from './session-pool.js';
import {
  createSlotWithSnapshot,
  dropSlotAndPublicationNamed,
  endSlotReader,
  ensurePublication,
  publicationName,
  slotName,
  slotPositions,
  slotStatus,
} from './slot.js';
import { exportSnapshot, slotSnapshot } from './snapshot.js';
import { sourceComparison } from './source-comparison.js';
import { tablesWithRows } from './table-rows.js';
import { verifyPublication } from './user-publication.js';

/**
 * A PostgreSQL database as a source: pgoutput logical replication from a slot and a publication
 * the pipeline owns (or one the user made and names in `options`), snapshots exported with the
 * slot (or from a REPEATABLE READ transaction) and copied with COPY. `connection` is an ordinary
 * connection's settings.
 */
export function createPostgresSource(connection: pg.ClientConfig, options: SourceOptions = {}): Source {
  return new PostgresSource(connection, options);
}

export const postgresSourceKind: SourceKind<pg.ClientConfig> = {
  type: 'postgres',
  create: createPostgresSource,
};

class PostgresSource implements Source {
  /** This source's share of the process's sessions to its database (see session-pool.ts). */
  private lease: SessionLease | undefined;
  /** Settles when this source's last queued work has ended. */
  private sessionTail: Promise<void> = Promise.resolve();

  constructor(
    private readonly connection: pg.ClientConfig,
    private readonly options: SourceOptions,
  ) {}

  async connect(options: { timeoutMs?: number } = {}): Promise<void> {
    const lease = await acquireSessionLease(this.connection);
    try {
      // The sessions are shared and may be open already: a query proves the server answers now.
      await lease.run((client) => client.query('SELECT 1'), options);
    } catch (error) {
      await lease.release();
      throw error;
    }
    const previous = this.lease;
    this.lease = lease;
    await previous?.release();
  }

  async readiness(): Promise<ReadinessCheck[]> {
    return this.inSession((client) => sourceReadiness(client));
  }

  async checkReady(): Promise<void> {
    return this.inSession((client) => checkSourceReady(client));
  }

  async checkAccess(tables: readonly TableRef[], pipelineId?: string): Promise<void> {
    const own = pipelineId === undefined ? undefined : this.ownPublication(pipelineId);
    return this.inSession((client) =>
      checkPrivileges(client, tables, {
        name: this.options.publication ?? own,
        userNamed: this.options.publication !== undefined,
      }),
    );
  }

  async describeTables(tables: readonly TableRef[]) {
    return this.inSession((client) => readTableSchemas(client, tables));
  }

  async listTables() {
    return this.inSession((client) => listTables(client));
  }

  async identity(): Promise<string | undefined> {
    return this.inSession((client) => databaseIdentity(client));
  }

  async goneTables(pipelineId: string, tables: readonly TableRef[]) {
    return this.inSession((client) => goneTables(client, this.publication(pipelineId), tables));
  }

  async tablesWithRows(tables: readonly TableRef[]): Promise<TableRef[]> {
    return this.inSession((client) => tablesWithRows(client, tables));
  }

  async publish(pipelineId: string, tables: readonly TableRef[]): Promise<void> {
    const own = this.options.publication === undefined;
    if (!own)
      return this.inSession((client) => verifyPublication(client, this.publication(pipelineId), tables));
    return this.inSession((client) => ensurePublication(client, this.ownPublication(pipelineId), tables));
  }

  async claimSlot(
    pipelineId: string,
    options: { mayCreate: boolean; logger: SourceLogger },
  ): Promise<SlotClaim> {
    const slot = this.slot(pipelineId);
    const status = await this.inSession((client) => slotStatus(client, slot));
    if (!status) {
      if (!options.mayCreate) throw new SlotMissingError(slot, 'does not exist any more');
      const created = await createSlotWithSnapshot(this.connection, slot);
      options.logger.info({ slot, lsn: created.consistentPoint }, 'created replication slot');
      return {
        position: parseLsn(created.consistentPoint),
        snapshot: slotSnapshot(this.connection, created),
      };
    }
    if (status.walStatus === 'lost') throw lostSlot(slot);
    if (status.active && status.activePid) {
      // The caller holds the pipeline's lease: whoever still streams from the slot (a worker that
      // lost the lease, or a connection left behind) is cut off rather than waited for.
      options.logger.warn(
        { slot, pid: status.activePid },
        'ending the other connection streaming from the slot',
      );
      const pid = status.activePid;
      await this.inSession((client) => endSlotReader(client, slot, pid));
    }
    return { position: status.confirmedFlushLsn ? parseLsn(status.confirmedFlushLsn) : 0n };
  }

  async walPosition(): Promise<bigint> {
    const { rows } = await this.inSession((client) =>
      client.query<{ lsn: string }>(
        `SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_flush_lsn() END)::text AS lsn`,
      ),
    );
    return parseLsn(rows[0]?.lsn ?? '0/0');
  }

  async positions(pipelineIds: readonly string[]): Promise<SourcePositions> {
    const read = await this.inSession((client) =>
      slotPositions(client, [...new Set(pipelineIds.map((id) => this.slot(id)))]),
    );
    const slots = new Map<string, SlotPosition>();
    for (const id of pipelineIds) {
      const slot = read.slots.get(this.slot(id));
      if (!slot) continue;
      slots.set(id, {
        confirmedLsn: slot.confirmedFlushLsn === null ? null : parseLsn(slot.confirmedFlushLsn),
        retainedWalBytes: slot.retainedWalBytes,
        walStatus: slot.walStatus,
      });
    }
    return { walEnd: parseLsn(read.walEnd), slots };
  }

  async slotStatus(pipelineId: string): Promise<SlotStatus> {
    const slot = this.slot(pipelineId);
    const status = await this.inSession((client) => slotStatus(client, slot));
    if (!status) throw new SlotMissingError(slot, 'does not exist any more');
    if (status.walStatus === 'lost') throw lostSlot(slot);
    return { retainedWalBytes: status.retainedWalBytes, walStatus: status.walStatus };
  }

  startStream(pipelineId: string, options: StreamOptions): ChangeStream {
    return startChangeStream({
      connection: this.connection,
      slotName: this.slot(pipelineId),
      publicationName: this.publication(pipelineId),
      startLsn: formatLsn(options.from),
      readSlot: (slot) => this.inSession((client) => slotStatus(client, slot)),
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.spoolDir ? { spoolDir: options.spoolDir } : {}),
      ...(options.live ? { live: true } : {}),
      ...(options.statusIntervalMs ? { statusIntervalMs: options.statusIntervalMs } : {}),
      ...(options.acknowledgeFrom === false ? { acknowledgeStart: false } : {}),
    });
  }

  // Drops the publication named from the pipeline's id only: one the user named is never the service's.
  async dropOwned(pipelineId: string): Promise<void> {
    return this.inSession((client) =>
      dropSlotAndPublicationNamed(client, this.slot(pipelineId), this.ownPublication(pipelineId)),
    );
  }

  ownedObjects(pipelineId: string) {
    const slot = this.slot(pipelineId);
    return {
      slot,
      what: `replication slot '${slot}'`,
      dropByHand: `SELECT pg_drop_replication_slot('${slot}')`,
    };
  }

  exportSnapshot(): Promise<SourceSnapshot> {
    return exportSnapshot(this.connection);
  }

  comparison() {
    return sourceComparison(this.connection);
  }

  async describeRelation(relation: SourceRelation): Promise<TableSchema | null> {
    const lease = this.lease;
    if (!lease) throw new Error('the source is not connected');
    // A change of the publication makes the walsender announce every table's shape again, to every
    // pipeline of a shared stream at once: asked together, they cost the source one round.
    return lease.batch('describe-relation', relationInfo(relation), schemasFromRelations);
  }

  async existingValues(relation: SourceRelation, columns: readonly string[]) {
    return this.inSession((client) => existingValues(client, relation.relationId, columns));
  }

  async close(): Promise<void> {
    const lease = this.lease;
    this.lease = undefined;
    await lease?.release();
  }

  /** The publication the pipeline streams through. */
  private publication(pipelineId: string): string {
    return this.options.publication ?? this.ownPublication(pipelineId);
  }

  /** The publication the service makes for the pipeline: its shared stream's, else its own. */
  private ownPublication(pipelineId: string): string {
    return this.options.stream ?? publicationName(pipelineId);
  }

  /** The slot the pipeline streams from: its shared stream's, else its own. */
  private slot(pipelineId: string): string {
    return this.options.stream ?? slotName(pipelineId);
  }

  /**
   * Runs `work` on a pooled session once this source's work before it ended: the slot monitor, the
   * tables watch and the applier call at once and rely on the source answering in order. Other
   * sources of the process run theirs meanwhile, on the pool's other sessions.
   */
  private inSession<T>(work: (client: pg.ClientBase) => Promise<T>): Promise<T> {
    const lease = this.lease;
    if (!lease) return Promise.reject(new Error('the source is not connected'));
    const done = this.sessionTail.then(() => lease.run(work));
    this.sessionTail = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }
}

const lostSlot = (slot: string) =>
  new SlotMissingError(slot, 'was invalidated by the source (wal_status lost)');

/** The pgoutput Relation message behind a relation item of this source's stream. */
function relationInfo(relation: SourceRelation): RelationInfo {
  if (!('replicaIdentity' in relation)) {
    throw new Error(`the relation of ${tableKey(relation)} was not announced by a PostgreSQL change stream`);
  }
  return relation as RelationInfo;
}

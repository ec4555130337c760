import { createHash } from 'node:crypto';
import type { DatabasePool } from 'slonik';
import { type TableRef, tableKey } from '../../core/change.js';
import { formatLsn, parseLsn } from '../../core/lsn.js';
import type { Source, SourcePositions } from '../../core/source.js';
import type { Logger } from '../../log/logger.js';
import { parseTableName } from '../../pipelines/table-name.js';
import type { PipelineRow } from '../../store/pipelines-store.js';
import { pipelinesStore } from '../../store/pipelines-store.js';
import { StreamGroup } from './stream-group.js';

/**
 * The name of the shared stream of a source connection (by its id): its slot's and its
 * publication's at the source. `replicator_s_` and 24 hex digits of a hash of the id (37
 * characters, a valid identifier). A slot's name is its server's, not its database's: the id,
 * random for each connection of each installation, keeps two from meeting on one server.
 */
export function sharedStreamName(connectionId: string): string {
  const hash = createHash('sha256').update(connectionId).digest('hex');
  return `replicator_s_${hash.slice(0, 24)}`;
}

/** Whether a slot's name is a shared stream's. */
export const isSharedStreamName = (name: string): boolean => /^replicator_s_[0-9a-f]{24}$/.test(name);

/** Whether a pipeline reads its source connection's shared stream. */
export const readsSharedStream = (row: PipelineRow): boolean => row.source_slot === 'shared';

export interface SharedStreamsDeps {
  pool: DatabasePool;
  logger: Logger;
  holdWalBytes: number;
  spoolDir?: string;
  statusIntervalMs?: number;
}

/** The shared streams of this process, one per project and source connection, made when first read. */
export class SharedStreams {
  private readonly groups = new Map<string, StreamGroup>();

  constructor(private readonly deps: SharedStreamsDeps) {}

  /** The stream `name` the pipeline reads; `openSource` connects to its slot and publication. */
  of(name: string, row: PipelineRow, openSource: () => Promise<Source>): StreamGroup {
    let group = this.groups.get(name);
    if (!group) {
      const { pool } = this.deps;
      const projectId = row.project_id;
      const connection = row.source_connection;
      group = new StreamGroup({
        name,
        openSource,
        members: async () =>
          (await pipelinesStore.streamMembers(pool, projectId, connection)).map((m) => ({
            pipelineId: m.id,
            lsn: m.stream_position === null ? null : parseLsn(m.stream_position),
            released: m.released,
          })),
        savePositions: async (positions) => {
          await pipelinesStore.saveStreamPositions(
            pool,
            [...positions].map(([id, lsn]) => ({ id, lsn: formatLsn(lsn) })),
          );
        },
        release: async (pipelineId) => {
          await pipelinesStore.markStreamReleased(pool, [pipelineId]);
        },
        logger: this.deps.logger.child({ stream: name }),
        holdWalBytes: this.deps.holdWalBytes,
        ...(this.deps.spoolDir ? { spoolDir: this.deps.spoolDir } : {}),
        ...(this.deps.statusIntervalMs ? { statusIntervalMs: this.deps.statusIntervalMs } : {}),
      });
      this.groups.set(name, group);
    }
    return group;
  }

  /**
   * Makes the stream's publication carry `tables` for the pipeline, and every table another
   * pipeline of the stream names that the source has: a pipeline that does not run now keeps
   * its tables published, so that none of its changes is lost while it is away.
   */
  async publish(row: PipelineRow, group: StreamGroup, source: Source, tables: readonly TableRef[]) {
    await group.exclusive(async () => {
      await source.publish(row.id, await this.withOthers(row, source, tables));
    });
  }

  /**
   * The pipeline is being deleted while others read the stream: its publication keeps only the
   * tables they name, so that the source does not send its tables' changes for no one.
   */
  async withdraw(row: PipelineRow, group: StreamGroup, source: Source): Promise<void> {
    await group.exclusive(async () => {
      const tables = await this.withOthers(row, source, []);
      // None of theirs at the source any more: the publication is left for their next start to set.
      if (tables.length > 0) await source.publish(row.id, tables);
    });
  }

  /** `tables`, and every table another pipeline of the stream names that the source has. */
  private async withOthers(row: PipelineRow, source: Source, tables: readonly TableRef[]) {
    const others = (await pipelinesStore.streamMembers(this.deps.pool, row.project_id, row.source_connection))
      .filter((m) => m.id !== row.id)
      .flatMap((m) => m.source_tables);
    const union = new Map(tables.map((t) => [tableKey(t), t] as const));
    const wanted = others.filter((name) => !union.has(name));
    if (wanted.length > 0) {
      const present = new Set(
        (await source.listTables()).filter((t) => t.replicable).map((t) => tableKey(t.table)),
      );
      for (const name of wanted) {
        if (present.has(name)) union.set(name, parseTableName(name) as TableRef);
      }
    }
    return [...union.values()];
  }

  /** Whether a pipeline of the stream other than `pipelineId` still exists. */
  async othersExist(row: PipelineRow): Promise<boolean> {
    const members = await pipelinesStore.streamMembers(this.deps.pool, row.project_id, row.source_connection);
    return members.some((m) => m.id !== row.id);
  }
}

/**
 * `source`, whose positions give each pipeline of the stream its own place in it: the position
 * the stream keeps for it, and the WAL the source keeps for it alone (what it holds back), where
 * the slot's own would give every pipeline the smallest of them all.
 */
export function withMemberPositions(source: Source, group: StreamGroup): Source {
  const positions = async (pipelineIds: readonly string[]): Promise<SourcePositions> => {
    const read = await source.positions(pipelineIds);
    const known = group.memberPositions();
    for (const id of pipelineIds) {
      const slot = read.slots.get(id);
      const own = known.get(id);
      if (!slot || own === undefined) continue;
      // Behind the slot: let go by the stream, so the source keeps nothing for it alone.
      const kept = slot.confirmedLsn === null || own >= slot.confirmedLsn;
      read.slots.set(id, {
        ...slot,
        confirmedLsn: own,
        retainedWalBytes: !kept ? slot.retainedWalBytes : read.walEnd > own ? Number(read.walEnd - own) : 0,
      });
    }
    return read;
  };
  return new Proxy(source, {
    get(target, property) {
      if (property === 'positions') return positions;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

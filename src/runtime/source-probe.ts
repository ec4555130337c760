import type { Source } from '../core/source.js';
import type { Logger } from '../log/logger.js';
import type { PipelineReading } from './pipeline-handle.js';
import type { PipelinesView } from './pipeline-registry.js';

/** How often the sources of this process's pipelines are read. */
export const SOURCE_PROBE_INTERVAL_MS = 1_000;
/** A source that does not answer within this is let go, and connected again at the next tick. */
const READ_TIMEOUT_MS = 5_000;
/** How long a pipeline's source connection is taken as known before it is looked up again. */
const LOOKUP_TTL_MS = 30_000;

/** The source connection of a pipeline: a key equal for pipelines one session can serve, and how to open it. */
export type SourceLookup = (pipelineId: string) => Promise<{ key: string; open: () => Promise<Source> }>;

interface Group {
  open: () => Promise<Source>;
  handles: PipelineReading[];
}

/**
 * Reads, every second, where each source's WAL ends and where the slots of this process's
 * pipelines stand, and hands it to their figures (lag, lag in bytes, retained WAL). It reads them
 * in every state a pipeline keeps its slot in (running, paused, held for review, failed), since a
 * pipeline that does not stream is behind too; a stopped one is not read.
 *
 * Cost on the source: one session per source database (pipelines reading the same source with the
 * same settings share it), one short catalog query a second; no walsender, no write.
 */
export class SourceProbe {
  private readonly sessions = new Map<string, Promise<Source>>();
  private readonly lookups = new Map<
    string,
    { key: string; open: () => Promise<Source>; generation: number; at: number }
  >();
  /** Sources whose failure is logged already: said once, until they answer again. */
  private readonly failing = new Set<string>();
  private reading: Promise<void> | null = null;

  constructor(
    private readonly deps: {
      handles: PipelinesView;
      lookup: SourceLookup;
      logger: Logger;
      now?: () => number;
    },
  ) {}

  /** Reads every watched source once; while a read is under way, waits for it instead. */
  tick(): Promise<void> {
    this.reading ??= this.readAll().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  /** Ends every session (the process stops). */
  async close(): Promise<void> {
    await this.reading;
    await Promise.all([...this.sessions.keys()].map((key) => this.closeSession(key)));
  }

  private async readAll(): Promise<void> {
    const groups = new Map<string, Group>();
    for (const handle of this.deps.handles.values()) {
      if (handle.state === 'stopped') {
        handle.stats.forgetSource();
        continue;
      }
      const lookup = await this.lookup(handle);
      if (!lookup) continue;
      const group = groups.get(lookup.key) ?? { open: lookup.open, handles: [] };
      group.handles.push(handle);
      groups.set(lookup.key, group);
    }
    for (const id of this.lookups.keys()) if (!this.deps.handles.has(id)) this.lookups.delete(id);
    for (const key of this.sessions.keys()) if (!groups.has(key)) await this.closeSession(key);
    await Promise.all([...groups].map(([key, group]) => this.read(key, group)));
  }

  private async lookup(handle: PipelineReading) {
    const now = this.now();
    const known = this.lookups.get(handle.id);
    if (known && known.generation === handle.generation && now - known.at < LOOKUP_TTL_MS) return known;
    try {
      const found = { ...(await this.deps.lookup(handle.id)), generation: handle.generation, at: now };
      this.lookups.set(handle.id, found);
      return found;
    } catch (error) {
      // The pipeline's own run reports a connection it cannot resolve; this only waits for it.
      this.deps.logger.debug(
        { err: error, pipeline: handle.name },
        'cannot look up the source to read its position',
      );
      this.lookups.delete(handle.id);
      return undefined;
    }
  }

  private async read(key: string, group: Group): Promise<void> {
    try {
      const session = this.sessions.get(key) ?? group.open();
      this.sessions.set(key, session);
      const source = await session;
      const positions = await withTimeout(source.positions(group.handles.map((h) => h.id)), READ_TIMEOUT_MS);
      // Taken once the answer is in: the WAL it tells of existed then, if not a little earlier.
      const at = this.now();
      for (const handle of group.handles) {
        handle.stats.observeSource(positions.walEnd, at, positions.slots.get(handle.id) ?? null);
      }
      this.failing.delete(key);
    } catch (error) {
      await this.closeSession(key);
      if (this.failing.has(key)) return;
      this.failing.add(key);
      this.deps.logger.warn(
        { err: error, pipelines: group.handles.map((h) => h.name) },
        'cannot read where the source stands, for the lag; trying again every second',
      );
    }
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  private async closeSession(key: string): Promise<void> {
    const session = this.sessions.get(key);
    this.sessions.delete(key);
    const source = await session?.catch(() => undefined);
    await source?.close().catch(() => undefined);
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the source did not answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

/** A pipeline's live figures as the instance running it measured them. */
export interface Figures {
  pipelineId: string;
  lagMs: number;
  lagBytes: number | null;
  retainedWalBytes: number | null;
  eventsPerSecond: number;
}

const StoredFigures = z.object({
  pipeline_id: z.string(),
  lag_ms: z.number(),
  lag_bytes: z.number().nullable(),
  retained_wal_bytes: z.number().nullable(),
  events_per_second: z.number(),
});

/** The stored lag as of now: what was measured, plus the time since when it was behind (the store's clock). */
const LAG_NOW = sql.fragment`CASE WHEN f.lag_ms > 0
  THEN f.lag_ms + (extract(epoch FROM now() - f.measured_at) * 1000)::bigint ELSE 0 END AS lag_ms`;

export const pipelineFiguresStore = {
  /** Stores the figures of the pipelines this instance runs, measured now, in one statement. */
  save: async (db: CommonQueryMethods, figures: readonly Figures[]) => {
    if (figures.length === 0) return;
    const column = (pick: (f: Figures) => string | number | null, type: 'uuid' | 'int8' | 'float8') =>
      sql.array(figures.map(pick), type);
    await db.query(sql.unsafe`INSERT INTO pipeline_figures
        (pipeline_id, lag_ms, lag_bytes, retained_wal_bytes, events_per_second, measured_at)
      SELECT f.id, f.lag, f.bytes, f.retained, f.eps, now()
      FROM unnest(${column((f) => f.pipelineId, 'uuid')}, ${column((f) => Math.round(f.lagMs), 'int8')},
        ${column((f) => f.lagBytes, 'int8')}, ${column((f) => f.retainedWalBytes, 'int8')},
        ${column((f) => f.eventsPerSecond, 'float8')}) AS f (id, lag, bytes, retained, eps)
      -- A pipeline deleted or stopped meanwhile has no figures.
      WHERE EXISTS (SELECT 1 FROM pipelines p WHERE p.id = f.id AND p.state <> 'stopped')
      ON CONFLICT (pipeline_id) DO UPDATE SET lag_ms = excluded.lag_ms, lag_bytes = excluded.lag_bytes,
        retained_wal_bytes = excluded.retained_wal_bytes, events_per_second = excluded.events_per_second,
        measured_at = excluded.measured_at`);
  },

  /**
   * The figures of every pipeline that is not stopped (a stopped one is not measured), the lag as
   * of now: what was measured, plus the time since, when it was behind.
   */
  listLive: async (db: CommonQueryMethods): Promise<Figures[]> => {
    const rows = await db.any(sql.type(StoredFigures)`SELECT f.pipeline_id,
        ${LAG_NOW},
        f.lag_bytes, f.retained_wal_bytes, f.events_per_second
      FROM pipeline_figures f JOIN pipelines p ON p.id = f.pipeline_id
      WHERE p.state <> 'stopped'`);
    return rows.map((r) => ({
      pipelineId: r.pipeline_id,
      lagMs: r.lag_ms,
      lagBytes: r.lag_bytes,
      retainedWalBytes: r.retained_wal_bytes,
      eventsPerSecond: r.events_per_second,
    }));
  },

  /**
   * The lag of a pipeline that is not stopped as its last owner measured it, as of now (by the
   * store's clock); null when none was stored.
   */
  lagOf: (db: CommonQueryMethods, pipelineId: string) =>
    db.maybeOneFirst(sql.type(z.object({ lag_ms: z.number() }))`SELECT
        ${LAG_NOW}
      FROM pipeline_figures f JOIN pipelines p ON p.id = f.pipeline_id
      WHERE f.pipeline_id = ${pipelineId} AND p.state <> 'stopped'`),

  /** A stopped pipeline is not measured: its figures go. */
  forget: (db: CommonQueryMethods, pipelineId: string) =>
    db.query(sql.unsafe`DELETE FROM pipeline_figures WHERE pipeline_id = ${pipelineId}`),
};

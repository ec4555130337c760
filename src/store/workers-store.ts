import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const WorkerRow = z.object({
  id: z.string(),
  hostname: z.string(),
  pid: z.number(),
  version: z.string(),
  started_at: z.string(),
  heartbeat_at: z.string(),
  stopped_at: z.string().nullable(),
  live: z.boolean(),
  pipelines: z.array(z.string()),
});

export const workersStore = {
  /**
   * Every worker known, newest first, with whether it is live and the pipelines it holds: those of
   * one project, or of every project (null).
   */
  list: (db: CommonQueryMethods, liveWithinMs: number, projectId: string | null) =>
    db.any(sql.type(
      WorkerRow,
    )`SELECT w.id, w.hostname, w.pid, w.version, w.started_at, w.heartbeat_at, w.stopped_at,
        (w.stopped_at IS NULL AND w.heartbeat_at > now() - make_interval(secs => ${liveWithinMs / 1000})) AS live,
        coalesce(array_agg(p.name ORDER BY p.name) FILTER (WHERE p.id IS NOT NULL), '{}') AS pipelines
      FROM workers w LEFT JOIN pipelines p ON p.owner_worker_id = w.id AND p.lease_expires_at >= now()
        ${projectId === null ? sql.fragment`` : sql.fragment`AND p.project_id = ${projectId}`}
      GROUP BY w.id ORDER BY w.started_at DESC`),

  /** Forgets workers gone (stopped or silent) for longer than `gracePeriodMs`. */
  forgetGone: (db: CommonQueryMethods, gracePeriodMs: number) =>
    db.query(sql.unsafe`DELETE FROM workers
      WHERE coalesce(stopped_at, heartbeat_at) < now() - make_interval(secs => ${gracePeriodMs / 1000})`),

  register: (db: CommonQueryMethods, w: { id: string; hostname: string; pid: number; version: string }) =>
    db.query(sql.unsafe`INSERT INTO workers (id, hostname, pid, version) VALUES (${w.id}, ${w.hostname}, ${w.pid},
      ${w.version})`),

  heartbeat: (db: CommonQueryMethods, id: string) =>
    db.query(sql.unsafe`UPDATE workers SET heartbeat_at = now() WHERE id = ${id}`),

  markStopped: (db: CommonQueryMethods, id: string) =>
    db.query(sql.unsafe`UPDATE workers SET stopped_at = now() WHERE id = ${id}`),

  /** Workers that heartbeated within the window and have not stopped. */
  countLive: (db: CommonQueryMethods, withinMs: number) =>
    db.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM workers
      WHERE stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => ${withinMs / 1000})`),
};

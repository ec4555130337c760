import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

export const workersStore = {
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

import { type DatabasePool, sql } from 'slonik';
import { z } from 'zod';

const AuditRow = z.object({
  id: z.number(),
  at: z.string(),
  actor_type: z.string(),
  actor_id: z.string().nullable(),
  actor_name: z.string(),
  action: z.string(),
  target: z.string().nullable(),
  project_id: z.string().nullable(),
  source_address: z.string().nullable(),
  outcome: z.string(),
  status: z.number().nullable(),
  request_id: z.string().nullable(),
  client_request_id: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
});

export interface AuditFilter {
  /** Events older than this id (the previous page's `next_cursor`). */
  beforeId?: number;
  limit: number;
  action?: string;
  actorId?: string;
  projectId?: string;
  outcome?: string;
}

/** The audit trail, newest first, one page at a time. */
export async function listAuditEvents(pool: DatabasePool, filter: AuditFilter) {
  const conditions = [sql.fragment`true`];
  if (filter.beforeId !== undefined) conditions.push(sql.fragment`id < ${filter.beforeId}`);
  if (filter.action) conditions.push(sql.fragment`action = ${filter.action}`);
  if (filter.actorId) conditions.push(sql.fragment`actor_id = ${filter.actorId}`);
  if (filter.projectId) conditions.push(sql.fragment`project_id = ${filter.projectId}`);
  if (filter.outcome) conditions.push(sql.fragment`outcome = ${filter.outcome}`);
  const rows = await pool.any(sql.type(AuditRow)`
    SELECT id, at, actor_type, actor_id, actor_name, action, target, project_id, source_address,
           outcome, status, request_id, client_request_id, details
    FROM audit_events WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY id DESC LIMIT ${filter.limit + 1}`);
  const page = rows.slice(0, filter.limit);
  const last = page.at(-1);
  return {
    events: page.map((row) => ({
      id: row.id,
      at: row.at,
      actor: { type: row.actor_type, id: row.actor_id, name: row.actor_name },
      action: row.action,
      target: row.target,
      project_id: row.project_id,
      source_address: row.source_address,
      outcome: row.outcome,
      status: row.status,
      request_id: row.request_id,
      client_request_id: row.client_request_id,
      details: row.details,
    })),
    next_cursor: rows.length > filter.limit && last ? String(last.id) : null,
  };
}

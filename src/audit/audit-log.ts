import { type DatabasePool, sql } from 'slonik';
import { z } from 'zod';
import type { Logger } from '../log/logger.js';
import type { AuditEvent } from './audit-event.js';
import type { AuditFile } from './audit-file.js';
import { type AuditFilter, listAuditEvents } from './audit-store.js';
import { boundedEvent } from './event-limits.js';
import {
  isAnonymousRefusal,
  RefusalThrottle,
  type RefusalThrottleOptions,
  suppressedEvent,
} from './refusal-throttle.js';

const StoredRow = z.object({ id: z.number(), at: z.string() });

/**
 * Appends audit events to the database (the trail the API reads) and to the JSON-lines file. The
 * table refuses updates and deletes by trigger, so the trail only grows: each event is bounded in
 * size, and anonymous refusals beyond a rate are counted rather than written one by one.
 */
export class AuditLog {
  private readonly throttle: RefusalThrottle;

  constructor(
    private readonly pool: DatabasePool,
    private readonly file: AuditFile,
    private readonly logger: Logger,
    throttle: Partial<RefusalThrottleOptions> = {},
  ) {
    this.throttle = new RefusalThrottle((summary) => void this.write(suppressedEvent(summary)), throttle);
  }

  async record(event: AuditEvent): Promise<void> {
    if (isAnonymousRefusal(event) && !this.throttle.admit(event.sourceAddress, event.action)) return;
    await this.write(event);
  }

  /** Writes one event, cut to size, to the table and then the file. */
  private async write(raw: AuditEvent): Promise<void> {
    const event = boundedEvent(raw);
    try {
      const row = await this.pool.one(sql.type(StoredRow)`
        INSERT INTO audit_events (actor_type, actor_id, actor_name, action, target, project_id,
                                  source_address, outcome, status, request_id, client_request_id,
                                  details)
        VALUES (${event.actorType}, ${event.actorId ?? null}, ${event.actorName}, ${event.action},
                ${event.target ?? null}, ${event.projectId ?? null}, ${event.sourceAddress ?? null},
                ${event.outcome}, ${event.status ?? null}, ${event.requestId ?? null},
                ${event.clientRequestId ?? null},
                ${sql.jsonb(JSON.parse(JSON.stringify(event.details ?? {})))})
        RETURNING id, at`);
      await this.file.append({ ...event, ...row });
    } catch (error) {
      // The call it records has already happened; losing its trace is logged loudly, not hidden.
      this.logger.error({ err: error, action: event.action }, 'audit event could not be recorded');
    }
  }

  /** A page of the trail, newest first. */
  list(filter: AuditFilter) {
    return listAuditEvents(this.pool, filter);
  }
}

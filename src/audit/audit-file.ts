import { constants } from 'node:fs';
import { access, appendFile, mkdir, open } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { StoredAuditEvent } from './audit-event.js';

const AUDIT_FILE_NAME = 'audit.log';
export const auditFilePath = (dataDir: string) => join(dataDir, AUDIT_FILE_NAME);

/**
 * The audit trail's copy as JSON lines in the data directory, for shipping to a log system. Each
 * event is one `appendFile` of one line, which the kernel appends whole (O_APPEND).
 */
export class AuditFile {
  constructor(readonly path: string) {}

  /** Creates the file if needed and proves it can be appended to; throws a readable reason if not. */
  async checkWritable(): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const handle = await open(this.path, 'a', 0o600);
    await handle.close();
    await access(this.path, constants.W_OK);
  }

  async append(event: StoredAuditEvent): Promise<void> {
    await appendFile(this.path, `${JSON.stringify(toLine(event))}\n`, { mode: 0o600 });
  }
}

function toLine(event: StoredAuditEvent) {
  return {
    id: event.id,
    at: event.at,
    actor: { type: event.actorType, id: event.actorId ?? null, name: event.actorName },
    action: event.action,
    target: event.target ?? null,
    project_id: event.projectId ?? null,
    source_address: event.sourceAddress ?? null,
    outcome: event.outcome,
    status: event.status ?? null,
    request_id: event.requestId ?? null,
    client_request_id: event.clientRequestId ?? null,
    details: event.details ?? {},
  };
}

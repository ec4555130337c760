import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** What a route adds to its call's audit event: the record it acted on, what changed. */
    auditNote: { target?: string; details?: Record<string, unknown> } | undefined;
  }
}

/** Adds the record acted on and facts about the change to this call's audit event. */
export function noteAudit(
  request: FastifyRequest,
  note: { target?: string; details?: Record<string, unknown> },
): void {
  request.auditNote = {
    target: note.target ?? request.auditNote?.target,
    details: { ...request.auditNote?.details, ...note.details },
  };
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AuditLog } from '../../audit/audit-log.js';
import { badRequest } from '../../errors/app-error.js';
import { AuditPage, AuditQuery } from '../schemas/audit.js';
import { errorResponses } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

/** `GET /v1/audit-events`: the trail for organization admins. It has no update or delete, by design. */
export const auditRoutes: FastifyPluginAsyncTypebox<{ audit: AuditLog }> = async (app, { audit }) => {
  addComponentSchemas(app);
  app.get(
    '/audit-events',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'listAuditEvents',
        tags: ['authentication'],
        summary:
          'The audit trail, newest first: every state-changing call, sign-in, token and role change, with its actor, target, source address and outcome',
        querystring: AuditQuery,
        response: { 200: AuditPage, ...errorResponses(400, 401, 403, 422) },
      },
    },
    async (request) => {
      const { limit, cursor, action, actor_id, project_id, outcome } = request.query;
      const size = limit === undefined ? 100 : Number(limit);
      if (size < 1 || size > 500) throw badRequest('limit', 'must be from 1 to 500');
      return audit.list({
        limit: size,
        beforeId: cursor === undefined ? undefined : Number(cursor),
        action,
        actorId: actor_id,
        projectId: project_id,
        outcome,
      });
    },
  );
};

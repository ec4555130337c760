import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { projectScope } from '../../context.js';
import type { HealthService } from '../../health/health-service.js';
import { ref, Unauthenticated } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import { Health } from '../schemas/health.js';

export const healthRoutes: FastifyPluginAsyncTypebox<{ health: HealthService }> = async (app, { health }) => {
  addComponentSchemas(app);
  app.get(
    '/health',
    {
      config: { permission: 'authenticated' },
      schema: {
        operationId: 'getHealth',
        tags: ['operations'],
        summary: 'Health of this instance and the fleet; 503 when a check fails',
        response: { 200: Health, 401: ref(Unauthenticated), 503: Health },
      },
    },
    async (request, reply) => {
      // A signed-in caller learns only about its active project (health needs one when authentication is on).
      const report = await health.report(projectScope(request.ctx));
      return reply.status(report.status === 'ok' ? 200 : 503).send(report);
    },
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Registry } from 'prom-client';
import { ref, Unauthenticated } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

/** `GET /metrics`: the service's metrics in the Prometheus text format, outside `/v1/`. */
export const metricsRoutes: FastifyPluginAsyncTypebox<{ registry: Registry }> = async (app, { registry }) => {
  addComponentSchemas(app);
  app.get(
    '/metrics',
    {
      config: { permission: 'metrics' },
      schema: {
        operationId: 'getMetrics',
        tags: ['operations'],
        summary: 'Metrics of this instance and the pipelines it runs, in the Prometheus text format',
        response: {
          200: {
            description: 'Prometheus text exposition format 0.0.4',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          401: ref(Unauthenticated),
        },
      },
    },
    async (_request, reply) => {
      const text = await registry.metrics();
      return reply.type(registry.contentType).send(text);
    },
  );
};

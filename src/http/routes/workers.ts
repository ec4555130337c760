import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { FORGET_WORKERS_AFTER_MS } from '../../fleet/worker-registry.js';
import type { WorkersService } from '../../fleet/workers-service.js';
import { ref, Timestamp, Unauthenticated } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

const Worker = Type.Object({
  id: Type.String(),
  hostname: Type.String(),
  pid: Type.Integer(),
  version: Type.String(),
  started_at: Timestamp,
  last_heartbeat_at: Timestamp,
  status: Type.String({
    description: `live, stale (no heartbeat within the lease time) or stopped; removed ${FORGET_WORKERS_AFTER_MS / 60_000} minutes after`,
  }),
  pipelines: Type.Array(Type.String(), {
    description:
      "Pipelines of the active project it holds a live lease on (another project's are not named); " +
      "every project's with authentication off",
  }),
});

/** GET /v1/workers: the instances of the fleet. */
export const workerRoutes: FastifyPluginAsyncTypebox<{ workers: WorkersService }> = async (
  app,
  { workers },
) => {
  addComponentSchemas(app);
  app.get(
    '/workers',
    {
      config: { permission: 'authenticated' },
      schema: {
        operationId: 'listWorkers',
        tags: ['operations'],
        summary: 'The workers of the fleet, newest first',
        response: { 200: Type.Array(Worker), 401: ref(Unauthenticated) },
      },
    },
    (request) => workers.list(request.ctx),
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { PipelinesService } from '../../pipelines/pipelines-service.js';
import { errorResponses, NameParams, ref, Unauthenticated } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import { ForceQuery } from '../schemas/connections.js';
import { Pipeline, PipelineCreateBody, PipelineReplaceBody, PipelineSummary } from '../schemas/pipelines.js';

const tags = ['pipelines'];

export const pipelineRoutes: FastifyPluginAsyncTypebox<{ pipelines: PipelinesService }> = async (
  app,
  { pipelines },
) => {
  addComponentSchemas(app);
  app.get(
    '/pipelines',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'listPipelines',
        tags,
        summary: 'List pipelines',
        response: { 200: Type.Array(ref(PipelineSummary)), 401: ref(Unauthenticated) },
      },
    },
    (request) => pipelines.list(request.ctx),
  );

  app.post(
    '/pipelines',
    {
      config: { permission: 'edit', action: 'pipeline.create' },
      schema: {
        operationId: 'createPipeline',
        tags,
        summary: 'Create a pipeline (stopped)',
        body: PipelineCreateBody,
        response: { 201: ref(Pipeline), ...errorResponses(400, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const created = await pipelines.create(request.ctx, request.body.name, request.body);
      return reply.status(201).send(created);
    },
  );

  app.get(
    '/pipelines/:name',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'getPipeline',
        tags,
        summary: 'Get a pipeline',
        params: NameParams,
        response: { 200: ref(Pipeline), ...errorResponses(404) },
      },
    },
    (request) => pipelines.get(request.ctx, request.params.name),
  );

  app.put(
    '/pipelines/:name',
    {
      config: { permission: 'edit', action: 'pipeline.update' },
      schema: {
        operationId: 'replacePipeline',
        tags,
        summary: 'Replace the definition of a pipeline; a running pipeline reloads it without a restart',
        params: NameParams,
        body: PipelineReplaceBody,
        response: { 200: ref(Pipeline), ...errorResponses(400, 404, 415, 422) },
      },
    },
    (request) => pipelines.replace(request.ctx, request.params.name, request.body),
  );

  app.delete(
    '/pipelines/:name',
    {
      config: { permission: 'edit', action: 'pipeline.delete' },
      schema: {
        operationId: 'deletePipeline',
        tags,
        summary:
          'Stop and delete a pipeline, dropping its replication slot and publication on the source; 502 ' +
          'SOURCE_UNAVAILABLE keeps it when the slot cannot be dropped, unless force=true',
        params: NameParams,
        querystring: ForceQuery,
        response: { 204: Type.Null(), ...errorResponses(404, 502) },
      },
    },
    async (request, reply) => {
      await pipelines.delete(request.ctx, request.params.name, request.query.force === 'true');
      return reply.status(204).send(null);
    },
  );
};

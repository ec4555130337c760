import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { PipelinesService } from '../../pipelines/pipelines-service.js';
import { errorResponses, NameParams, ref, Unauthenticated } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import {
  DefinitionTagHeaders,
  definitionTag,
  matchedGeneration,
  ORPHANED_SLOT_HEADER,
  Pipeline,
  PipelineCreateBody,
  PipelineForceQuery,
  PipelineReplaceBody,
  PipelineSummary,
  ReplaceHeaders,
} from '../schemas/pipelines.js';

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
        response: { 200: { ...ref(Pipeline), headers: DefinitionTagHeaders }, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const pipeline = await pipelines.get(request.ctx, request.params.name);
      reply.header('etag', definitionTag(pipeline.generation));
      return pipeline;
    },
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
        headers: ReplaceHeaders,
        body: PipelineReplaceBody,
        response: {
          200: { ...ref(Pipeline), headers: DefinitionTagHeaders },
          ...errorResponses(400, 404, 412, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const ifMatch = request.headers['if-match'];
      const pipeline = await pipelines.replace(
        request.ctx,
        request.params.name,
        request.body,
        ifMatch === undefined ? null : matchedGeneration(ifMatch),
      );
      reply.header('etag', definitionTag(pipeline.generation));
      return pipeline;
    },
  );

  app.delete(
    '/pipelines/:name',
    {
      config: { permission: 'edit', action: 'pipeline.delete' },
      schema: {
        operationId: 'deletePipeline',
        tags,
        summary:
          'Stop and delete a pipeline, dropping its replication slot and publication on the source; 409 ' +
          'SLOT_NOT_DROPPED keeps it when the slot cannot be dropped, unless force=true',
        params: NameParams,
        querystring: PipelineForceQuery,
        response: {
          204: Type.Null({
            description: 'Deleted',
            headers: {
              [ORPHANED_SLOT_HEADER]: Type.String({
                description:
                  'Only on a forced delete that could not drop the slot: the replication slot left on the ' +
                  "source (listed in the source connection's orphaned_slots until it is dropped)",
              }),
            },
          }),
          ...errorResponses(400, 404, 409),
        },
      },
    },
    async (request, reply) => {
      const orphan = await pipelines.delete(request.ctx, request.params.name, request.query.force === 'true');
      if (orphan) reply.header(ORPHANED_SLOT_HEADER, orphan.slot);
      return reply.status(204).send(null);
    },
  );
};

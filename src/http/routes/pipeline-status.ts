import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { parseDuration } from '../../config/duration.js';
import { badRequest } from '../../errors/app-error.js';
import { HISTORY_KEEP_MS } from '../../pipelines/history-resolution.js';
import type { PipelineStatusService } from '../../pipelines/pipeline-status-service.js';
import { errorResponses, NameParams, ref } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import {
  BackfillAccepted,
  BackfillBody,
  HistoryQuery,
  PipelineHistory,
  PipelineMetrics,
  ResyncAccepted,
  RunHistory,
  RunsQuery,
  SnapshotProgress,
  StateChangeBody,
} from '../schemas/pipeline-status.js';
import { Pipeline } from '../schemas/pipelines.js';

const tags = ['pipelines'];

export const pipelineStatusRoutes: FastifyPluginAsyncTypebox<{ status: PipelineStatusService }> = async (
  app,
  { status },
) => {
  addComponentSchemas(app);
  app.put(
    '/pipelines/:name/state',
    {
      config: { permission: 'operate', action: 'pipeline.state', actionBody: true },
      schema: {
        operationId: 'changePipelineState',
        tags,
        summary:
          'Start, stop, pause or resume a pipeline; 409 INVALID_TRANSITION when its state does not allow it',
        params: NameParams,
        body: StateChangeBody,
        response: { 200: ref(Pipeline), ...errorResponses(400, 404, 409, 415) },
      },
    },
    (request) => status.changeState(request.ctx, request.params.name, request.body.state),
  );

  app.post(
    '/pipelines/:name/backfill',
    {
      config: { permission: 'operate', action: 'pipeline.backfill', actionBody: true },
      schema: {
        operationId: 'backfillPipeline',
        tags,
        summary:
          'Copy tables of a pipeline again (202). A streaming pipeline does it while its other tables keep ' +
          'streaming; the table is emptied and refilled, its changes meanwhile held and applied after. A failed ' +
          'pipeline is started to copy them: the way back from `SINK_TABLE_CHANGED`',
        params: NameParams,
        body: BackfillBody,
        response: { 202: BackfillAccepted, ...errorResponses(400, 404, 409, 415, 422) },
      },
    },
    async (request, reply) =>
      reply.status(202).send(await status.backfill(request.ctx, request.params.name, request.body.tables)),
  );

  app.post(
    '/pipelines/:name/resync',
    {
      config: { permission: 'operate', action: 'pipeline.resync' },
      schema: {
        operationId: 'resyncPipeline',
        tags,
        summary:
          'Resync a stopped or failed pipeline (202): the way back after a lost or dropped slot. Drops the old ' +
          'slot if it still exists, creates a new one, empties and copies every table again, then streams; the ' +
          'pipeline starts at once and keeps its run history and counters. No body. 409 INVALID_TRANSITION ' +
          'in any other state (a running pipeline must be stopped first)',
        params: NameParams,
        response: { 202: ResyncAccepted, ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => reply.status(202).send(await status.resync(request.ctx, request.params.name)),
  );

  app.get(
    '/pipelines/:name/metrics',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'getPipelineMetrics',
        tags,
        summary: 'Throughput, lag and counters',
        params: NameParams,
        response: { 200: PipelineMetrics, ...errorResponses(404) },
      },
    },
    (request) => status.metrics(request.ctx, request.params.name),
  );

  app.get(
    '/pipelines/:name/progress',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'getPipelineProgress',
        tags,
        summary: 'Snapshot progress per table',
        params: NameParams,
        response: { 200: SnapshotProgress, ...errorResponses(404) },
      },
    },
    (request) => status.progress(request.ctx, request.params.name),
  );

  app.get(
    '/pipelines/:name/runs',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'listPipelineRuns',
        tags,
        summary: 'Run history, newest first, paged with a cursor',
        params: NameParams,
        querystring: RunsQuery,
        response: { 200: RunHistory, ...errorResponses(404, 422) },
      },
    },
    (request) => {
      const limit = request.query.limit === undefined ? 20 : Number(request.query.limit);
      if (limit < 1 || limit > 100) throw badRequest('limit', 'must be from 1 to 100');
      return status.runs(request.ctx, request.params.name, limit, request.query.cursor);
    },
  );

  app.get(
    '/pipelines/:name/history',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'getPipelineHistory',
        tags,
        summary:
          "The pipeline's figures over time, oldest first: a point every 10 s an instance ran it, in every state " +
          '(the peak lag and the mean throughput of those seconds), kept 48 h; what the charts start from. ' +
          'Over a window longer than 2 h, points are merged so that the answer holds 720 at most ' +
          '(30 s each over 6 h, 2 min over 24 h): `resolution_seconds` says how long each covers',
        params: NameParams,
        querystring: HistoryQuery,
        response: { 200: PipelineHistory, ...errorResponses(400, 404) },
      },
    },
    (request) => {
      const text = request.query.window ?? '1h';
      const windowMs = parseDuration(text);
      if (windowMs === undefined || windowMs > HISTORY_KEEP_MS) {
        throw badRequest('window', 'must be a duration up to 48h, such as 15m, 1h or 24h');
      }
      return status.history(request.ctx, request.params.name, windowMs);
    },
  );
};

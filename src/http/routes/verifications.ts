import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { badRequest } from '../../errors/app-error.js';
import type { VerificationService } from '../../verify/verification-service.js';
import { errorResponses, NameParams, ref } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import {
  Verification,
  VerificationList,
  VerificationParams,
  VerificationsQuery,
  VerifyBody,
} from '../schemas/verifications.js';

const tags = ['verifications'];

/** Verification of a pipeline's sink against its source, and repair of what differs. */
export const verificationRoutes: FastifyPluginAsyncTypebox<{ verifications: VerificationService }> = async (
  app,
  { verifications },
) => {
  addComponentSchemas(app);
  app.post(
    '/pipelines/:name/verify',
    {
      config: { permission: 'operate', action: 'pipeline.verify', actionBody: true },
      schema: {
        operationId: 'verifyPipeline',
        tags,
        summary:
          'Start a verification of a running pipeline (202): each table (or the named ones) is compared between the ' +
          'source and the sink by key ranges, live, and the differing rows found by key. One at a time per pipeline ' +
          '(409 VERIFICATION_RUNNING); 409 PIPELINE_NOT_RUNNING unless running; 422 VERIFY_UNSUPPORTED for a message sink',
        params: NameParams,
        body: VerifyBody,
        response: { 202: ref(Verification), ...errorResponses(400, 404, 409, 415, 422) },
      },
    },
    async (request, reply) =>
      reply.status(202).send(await verifications.start(request.ctx, request.params.name, request.body ?? {})),
  );

  app.get(
    '/pipelines/:name/verifications',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'listVerifications',
        tags,
        summary: 'The verifications of a pipeline, newest first',
        params: NameParams,
        querystring: VerificationsQuery,
        response: { 200: VerificationList, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const limit = request.query.limit === undefined ? 20 : Number(request.query.limit);
      if (limit < 1 || limit > 100) throw badRequest('limit', 'must be from 1 to 100');
      return { verifications: await verifications.list(request.ctx, request.params.name, limit) };
    },
  );

  app.get(
    '/pipelines/:name/verifications/:id',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'getVerification',
        tags,
        summary: 'One verification: where it stands, and per table what it found',
        params: VerificationParams,
        response: { 200: ref(Verification), ...errorResponses(400, 404) },
      },
    },
    (request) => verifications.get(request.ctx, request.params.name, request.params.id),
  );

  app.post(
    '/pipelines/:name/verifications/:id/cancel',
    {
      config: { permission: 'operate', action: 'pipeline.verify.cancel' },
      schema: {
        operationId: 'cancelVerification',
        tags,
        summary:
          'Cancel a queued or running verification; the instance running it stops within about a second. ' +
          '409 INVALID_TRANSITION once it has ended. No body',
        params: VerificationParams,
        response: { 200: ref(Verification), ...errorResponses(400, 404, 409) },
      },
    },
    (request) => verifications.cancel(request.ctx, request.params.name, request.params.id),
  );

  app.post(
    '/pipelines/:name/verifications/:id/repair',
    {
      config: { permission: 'operate', action: 'pipeline.repair' },
      schema: {
        operationId: 'repairVerification',
        tags,
        summary:
          'Copy again the rows a completed verification found differing (202), through the backfill path while the ' +
          'pipeline streams, then verify those tables again (`repair.verification_id`). 409 INVALID_TRANSITION when ' +
          'the verification is not completed, found nothing, or is being repaired; 409 PIPELINE_NOT_RUNNING. No body',
        params: VerificationParams,
        response: { 202: ref(Verification), ...errorResponses(400, 404, 409) },
      },
    },
    async (request, reply) =>
      reply.status(202).send(await verifications.repair(request.ctx, request.params.name, request.params.id)),
  );
};

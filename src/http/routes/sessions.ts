import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { SessionService } from '../../auth/session-service.js';
import { IdParams } from '../schemas/auth.js';
import { errorResponses, Timestamp, UUID_PATTERN } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

const tags = ['authentication'];

const SessionView = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  project_id: Type.String({ description: 'the active project' }),
  created_at: Timestamp,
  last_seen_at: Timestamp,
  expires_at: Timestamp,
  absolute_expires_at: Timestamp,
  source_address: Type.Union([Type.String(), Type.Null()]),
  user_agent: Type.Union([Type.String(), Type.Null()]),
  current: Type.Boolean({ description: 'the session this request came with' }),
});

const SessionsQuery = Type.Object(
  {
    user_id: Type.Optional(
      Type.String({
        pattern: UUID_PATTERN,
        description: "another user's id (organization admins)",
      }),
    ),
  },
  { additionalProperties: false },
);

/** The signed-in user's sessions (an organization admin: anyone's), to see and end them. */
export const sessionRoutes: FastifyPluginAsyncTypebox<{ sessions: SessionService }> = async (
  app,
  { sessions },
) => {
  addComponentSchemas(app);
  app.get(
    '/auth/sessions',
    {
      config: { permission: 'authenticated' },
      schema: {
        operationId: 'listSessions',
        tags,
        summary: 'Live sessions of the caller, or of user_id for an organization admin; never their secrets',
        querystring: SessionsQuery,
        response: { 200: Type.Array(SessionView), ...errorResponses(400, 401, 403, 409, 422) },
      },
    },
    (request) => sessions.list(request.ctx, request.query.user_id),
  );

  app.delete(
    '/auth/sessions/:id',
    {
      config: { permission: 'authenticated', action: 'session.end' },
      schema: {
        operationId: 'endSession',
        tags,
        summary: "End a session at once: one's own, or anyone's for an organization admin",
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(401, 404, 409) },
      },
    },
    async (request, reply) => {
      await sessions.end(request.ctx, request.params.id);
      return reply.status(204).send(null);
    },
  );
};

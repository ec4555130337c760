import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { TokenService } from '../../auth/token-service.js';
import { CreatedToken, IdParams, Token, TokenCreateBody } from '../schemas/auth.js';
import { errorResponses, ref } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

const tags = ['authentication'];

/** API tokens of the active project: made from a session, listed without secrets, revoked. */
export const tokenRoutes: FastifyPluginAsyncTypebox<{ tokens: TokenService }> = async (app, { tokens }) => {
  addComponentSchemas(app);
  app.post(
    '/tokens',
    {
      config: { permission: 'read', action: 'token.create' },
      schema: {
        operationId: 'createToken',
        tags,
        summary:
          'Create an API token in the active project; the secret is in this response only. Made from a session, not a token',
        body: TokenCreateBody,
        response: { 201: ref(CreatedToken), ...errorResponses(400, 401, 403, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const { name, lifetime_hours, role } = request.body;
      return reply
        .status(201)
        .send(await tokens.create(request.ctx, { name, lifetimeHours: lifetime_hours, role }));
    },
  );

  app.get(
    '/tokens',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'listTokens',
        tags,
        summary: "Your tokens in the active project (a project admin sees everyone's); never their secrets",
        response: { 200: Type.Array(ref(Token)), ...errorResponses(401, 403, 409) },
      },
    },
    (request) => tokens.list(request.ctx),
  );

  app.delete(
    '/tokens/:id',
    {
      config: { permission: 'read', action: 'token.revoke' },
      schema: {
        operationId: 'revokeToken',
        tags,
        summary:
          'Revoke a token at once (yours; a project admin: any of the project). Revoking twice is harmless',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await tokens.revoke(request.ctx, request.params.id);
      return reply.status(204).send(null);
    },
  );
};

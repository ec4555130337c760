import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { noteAudit } from '../../audit/audit-note.js';
import type { UsersService } from '../../tenancy/users-service.js';
import { errorResponses, ref, Unauthenticated } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import { IdParams, User, UserCreateBody, UserUpdateBody } from '../schemas/tenancy.js';

const tags = ['users'];
const LAST_ADMIN =
  'Refused with 409 LAST_ADMIN when the user is the last enabled one holding admin at organization scope, ' +
  'so that someone can always manage the service.';

/** User administration: every route needs admin at organization scope. */
export const userRoutes: FastifyPluginAsyncTypebox<{ users: UsersService }> = async (app, { users }) => {
  addComponentSchemas(app);
  app.get(
    '/users',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'listUsers',
        tags,
        summary: 'List users',
        description: 'Every user of the organization, by e-mail. The password hash is never returned.',
        response: { 200: Type.Array(ref(User)), 401: ref(Unauthenticated) },
      },
    },
    (request) => users.list(request.ctx),
  );

  app.post(
    '/users',
    {
      config: { permission: 'organization', action: 'user.create' },
      schema: {
        operationId: 'createUser',
        tags,
        summary: 'Create a user',
        description:
          'The e-mail is unique regardless of case (409 ALREADY_EXISTS). With a password the user may sign ' +
          'in with it; a weak one is refused with 422 saying why. Without one the user signs in only through ' +
          'SSO. A new user holds no role: bind one with POST /v1/role-bindings.',
        body: UserCreateBody,
        response: { 201: ref(User), ...errorResponses(400, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const created = await users.create(request.ctx, request.body);
      noteAudit(request, {
        target: `user:${created.id}`,
        details: {
          email: created.email,
          display_name: created.display_name,
          password: request.body.password !== undefined,
        },
      });
      return reply.status(201).send(created);
    },
  );

  app.get(
    '/users/:id',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'getUser',
        tags,
        summary: 'Get a user',
        description: 'An id that is not a UUID names no user: 404.',
        params: IdParams,
        response: { 200: ref(User), ...errorResponses(404) },
      },
    },
    (request) => users.get(request.ctx, request.params.id),
  );

  app.patch(
    '/users/:id',
    {
      config: { permission: 'organization', action: 'user.update' },
      schema: {
        operationId: 'updateUser',
        tags,
        summary: 'Change a user’s display name, disabled flag or password',
        description:
          'Only the fields given change; the e-mail cannot. Disabling a user or setting its password ends ' +
          'all its sessions (the caller’s own too, when it changes its own password); a disabled user’s ' +
          `tokens stop working until it is enabled again. ${LAST_ADMIN}`,
        params: IdParams,
        body: UserUpdateBody,
        response: { 200: ref(User), ...errorResponses(400, 404, 409, 415, 422) },
      },
    },
    (request) => users.update(request.ctx, request.params.id, request.body),
  );

  app.delete(
    '/users/:id',
    {
      config: { permission: 'organization', action: 'user.delete' },
      schema: {
        operationId: 'deleteUser',
        tags,
        summary: 'Delete a user',
        description:
          'Deletes the user with its role bindings, API tokens, SSO identities and sessions. ' +
          `To keep its records but stop it signing in, disable it instead. ${LAST_ADMIN}`,
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      await users.delete(request.ctx, request.params.id);
      return reply.status(204).send(null);
    },
  );
};

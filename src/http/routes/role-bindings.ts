import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { noteAudit } from '../../audit/audit-note.js';
import type { RoleBindingsService } from '../../tenancy/role-bindings-service.js';
import { errorResponses, ref, Unauthenticated } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import {
  IdParams,
  RoleBinding,
  RoleBindingCreateBody,
  RoleBindingsQuery,
  RoleInfo,
} from '../schemas/tenancy.js';

const tags = ['role bindings'];

/** Roles and who holds them where: every route needs admin at organization scope. */
export const roleBindingRoutes: FastifyPluginAsyncTypebox<{ roleBindings: RoleBindingsService }> = async (
  app,
  { roleBindings },
) => {
  addComponentSchemas(app);
  app.get(
    '/roles',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'listRoles',
        tags,
        summary: 'List the roles',
        description:
          'viewer, operator, editor and admin, weakest first: each may do what the one before it may. ' +
          'A role bound at a scope applies in every project inside it, and a user’s strongest applies.',
        response: { 200: Type.Array(RoleInfo), 401: ref(Unauthenticated) },
      },
    },
    (request) => roleBindings.roles(request.ctx),
  );

  app.get(
    '/role-bindings',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'listRoleBindings',
        tags,
        summary: 'List role bindings',
        description:
          'By user e-mail, then scope. Filters, each optional: user_id, scope_type, scope_id (a malformed ' +
          'id: 422).',
        querystring: RoleBindingsQuery,
        response: { 200: Type.Array(ref(RoleBinding)), ...errorResponses(400, 422) },
      },
    },
    (request) =>
      roleBindings.list(request.ctx, {
        userId: request.query.user_id,
        scopeType: request.query.scope_type,
        scopeId: request.query.scope_id,
      }),
  );

  app.post(
    '/role-bindings',
    {
      config: { permission: 'organization', action: 'role_binding.create' },
      schema: {
        operationId: 'createRoleBinding',
        tags,
        summary: 'Bind a role to a user at a scope',
        description:
          'scope_type organization means the one organization (omit scope_id); admin there manages users, ' +
          'workspaces, projects, role bindings, SSO and the audit trail. For a workspace or project give ' +
          'scope_id or scope (its name), not both. An unknown user, role, scope type or scope is a 422 naming ' +
          'the field; the same binding twice is 409 ALREADY_EXISTS.',
        body: RoleBindingCreateBody,
        response: { 201: ref(RoleBinding), ...errorResponses(400, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const created = await roleBindings.create(request.ctx, request.body);
      noteAudit(request, {
        target: `role_binding:${created.id}`,
        details: {
          user_id: created.user_id,
          user_email: created.user_email,
          role: created.role,
          scope_type: created.scope_type,
          scope_id: created.scope_id,
          scope_name: created.scope_name,
        },
      });
      return reply.status(201).send(created);
    },
  );

  app.get(
    '/role-bindings/:id',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'getRoleBinding',
        tags,
        summary: 'Get a role binding',
        params: IdParams,
        response: { 200: ref(RoleBinding), ...errorResponses(404) },
      },
    },
    (request) => roleBindings.get(request.ctx, request.params.id),
  );

  app.delete(
    '/role-bindings/:id',
    {
      config: { permission: 'organization', action: 'role_binding.delete' },
      schema: {
        operationId: 'deleteRoleBinding',
        tags,
        summary: 'Remove a role binding',
        description:
          'Refused with 409 LAST_ADMIN for the organization admin binding of the last enabled organization ' +
          'admin. A binding an SSO login made (source sso:<provider>) comes back at the user’s next SSO ' +
          'login if the provider still maps it.',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      await roleBindings.delete(request.ctx, request.params.id);
      return reply.status(204).send(null);
    },
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { WorkspacesService } from '../../tenancy/workspaces-service.js';
import { errorResponses, ref, Unauthenticated } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import { IdParams, Workspace, WorkspaceBody } from '../schemas/tenancy.js';

const tags = ['workspaces'];

/** Workspaces, which group projects: every route needs admin at organization scope. */
export const workspaceRoutes: FastifyPluginAsyncTypebox<{ workspaces: WorkspacesService }> = async (
  app,
  { workspaces },
) => {
  addComponentSchemas(app);
  app.get(
    '/workspaces',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'listWorkspaces',
        tags,
        summary: 'List workspaces',
        description: 'Every workspace of the organization, by name, with how many projects it holds.',
        response: { 200: Type.Array(ref(Workspace)), 401: ref(Unauthenticated) },
      },
    },
    (request) => workspaces.list(request.ctx),
  );

  app.post(
    '/workspaces',
    {
      config: { permission: 'organization', action: 'workspace.create' },
      schema: {
        operationId: 'createWorkspace',
        tags,
        summary: 'Create a workspace',
        description:
          'Names follow the rule of pipeline and connection names and are unique in the organization ' +
          '(409 ALREADY_EXISTS). A role bound at a workspace applies to every project in it.',
        body: WorkspaceBody,
        response: { 201: ref(Workspace), ...errorResponses(400, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const created = await workspaces.create(request.ctx, request.body.name);
      return reply.status(201).send(created);
    },
  );

  app.get(
    '/workspaces/:id',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'getWorkspace',
        tags,
        summary: 'Get a workspace',
        description: 'An id that is not a UUID names no workspace: 404.',
        params: IdParams,
        response: { 200: ref(Workspace), ...errorResponses(404) },
      },
    },
    (request) => workspaces.get(request.ctx, request.params.id),
  );

  app.patch(
    '/workspaces/:id',
    {
      config: { permission: 'organization', action: 'workspace.update' },
      schema: {
        operationId: 'updateWorkspace',
        tags,
        summary: 'Rename a workspace',
        description:
          'Its id, projects and role bindings stay. The default workspace may be renamed too; bodies that ' +
          'name a workspace then use the new name.',
        params: IdParams,
        body: WorkspaceBody,
        response: { 200: ref(Workspace), ...errorResponses(400, 404, 409, 415, 422) },
      },
    },
    (request) => workspaces.rename(request.ctx, request.params.id, request.body.name),
  );

  app.delete(
    '/workspaces/:id',
    {
      config: { permission: 'organization', action: 'workspace.delete' },
      schema: {
        operationId: 'deleteWorkspace',
        tags,
        summary: 'Delete an empty workspace',
        description:
          'Deletes the workspace and the role bindings scoped to it. Refused with 409 WORKSPACE_IN_USE while ' +
          'it holds projects (named in the message): move them with PATCH /v1/projects/{id} or delete them ' +
          'first. The default workspace, where projects go when none is named, is refused with 409 ' +
          'DEFAULT_NOT_DELETABLE.',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      await workspaces.delete(request.ctx, request.params.id);
      return reply.status(204).send(null);
    },
  );
};

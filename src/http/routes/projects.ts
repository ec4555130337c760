import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ProjectsService } from '../../tenancy/projects-service.js';
import { errorResponses, ref } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import {
  IdParams,
  Project,
  ProjectCreateBody,
  ProjectsQuery,
  ProjectUpdateBody,
} from '../schemas/tenancy.js';

const tags = ['projects'];

/** Projects, which hold pipelines and connections: every route needs admin at organization scope. */
export const projectRoutes: FastifyPluginAsyncTypebox<{ projects: ProjectsService }> = async (
  app,
  { projects },
) => {
  addComponentSchemas(app);
  app.get(
    '/projects',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'listProjects',
        tags,
        summary: 'List projects',
        description:
          'Every project of the organization, by name, with its workspace’s id and name; ?workspace=<name> ' +
          'lists only that workspace’s (an unknown workspace: 400).',
        querystring: ProjectsQuery,
        response: { 200: Type.Array(ref(Project)), ...errorResponses(400) },
      },
    },
    (request) => projects.list(request.ctx, request.query.workspace),
  );

  app.post(
    '/projects',
    {
      config: { permission: 'organization', action: 'project.create' },
      schema: {
        operationId: 'createProject',
        tags,
        summary: 'Create a project',
        description:
          'In the workspace named by `workspace` (an unknown one: 422), or the default workspace. Project ' +
          'names are unique in the organization, across workspaces (409 ALREADY_EXISTS).',
        body: ProjectCreateBody,
        response: { 201: ref(Project), ...errorResponses(400, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const created = await projects.create(request.ctx, request.body);
      return reply.status(201).send(created);
    },
  );

  app.get(
    '/projects/:id',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'getProject',
        tags,
        summary: 'Get a project',
        description: 'Projects are named by id in paths; an id that is not a UUID names no project: 404.',
        params: IdParams,
        response: { 200: ref(Project), ...errorResponses(404) },
      },
    },
    (request) => projects.get(request.ctx, request.params.id),
  );

  app.patch(
    '/projects/:id',
    {
      config: { permission: 'organization', action: 'project.update' },
      schema: {
        operationId: 'updateProject',
        tags,
        summary: 'Rename a project or move it to another workspace',
        description:
          'Give `name`, `workspace` (a workspace’s name) or both. The project keeps its id, pipelines, ' +
          'connections, tokens and project-scoped role bindings; after a move, roles bound at the old ' +
          'workspace no longer reach it and those bound at the new one do.',
        params: IdParams,
        body: ProjectUpdateBody,
        response: { 200: ref(Project), ...errorResponses(400, 404, 409, 415, 422) },
      },
    },
    (request) => projects.update(request.ctx, request.params.id, request.body),
  );

  app.delete(
    '/projects/:id',
    {
      config: { permission: 'organization', action: 'project.delete' },
      schema: {
        operationId: 'deleteProject',
        tags,
        summary: 'Delete an empty project',
        description:
          'Deletes the project and the role bindings scoped to it; the API tokens bound to it and the ' +
          'sessions whose active project it is end with it. Refused with 409 PROJECT_IN_USE while it holds ' +
          'pipelines or connections (named in the message): delete them first. The default project is ' +
          'refused with 409 DEFAULT_NOT_DELETABLE.',
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      await projects.delete(request.ctx, request.params.id);
      return reply.status(204).send(null);
    },
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { OrganizationService } from '../../tenancy/organization-service.js';
import { errorResponses, Name, Timestamp } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

const Organization = Type.Object({ id: Type.String(), name: Type.String(), created_at: Timestamp });

/** The one organization: any signed-in caller reads it, organization admins rename it. */
export const organizationRoutes: FastifyPluginAsyncTypebox<{ organization: OrganizationService }> = async (
  app,
  { organization },
) => {
  addComponentSchemas(app);
  app.get(
    '/organization',
    {
      config: { permission: 'authenticated' },
      schema: {
        operationId: 'getOrganization',
        tags: ['workspaces'],
        summary: 'The organization',
        response: { 200: Organization, ...errorResponses(401) },
      },
    },
    () => organization.get(),
  );

  app.patch(
    '/organization',
    {
      config: { permission: 'organization', action: 'organization.update' },
      schema: {
        operationId: 'updateOrganization',
        tags: ['workspaces'],
        summary: 'Rename the organization',
        body: Type.Object({ name: Name }, { additionalProperties: false }),
        response: { 200: Organization, ...errorResponses(400, 401, 403, 415, 422) },
      },
    },
    (request) => organization.rename(request.body.name),
  );
};

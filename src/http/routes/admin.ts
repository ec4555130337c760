import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AccountService } from '../../auth/account-service.js';
import { loginRateLimit } from '../login-rate-limit.js';
import { BootstrapBody, BootstrapResult } from '../schemas/auth.js';
import { errorResponses } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

export const adminRoutes: FastifyPluginAsyncTypebox<{
  accounts: AccountService;
  loginAttemptsPerMinute: number;
}> = async (app, { accounts, loginAttemptsPerMinute }) => {
  addComponentSchemas(app);
  app.post(
    '/admin/bootstrap',
    {
      config: {
        permission: 'public',
        action: 'admin.bootstrap',
        rateLimit: loginRateLimit(loginAttemptsPerMinute),
      },
      schema: {
        operationId: 'bootstrapAdmin',
        tags: ['authentication'],
        summary:
          'Create the first admin user, bound to admin at organization scope; works in both modes, refused with 409 ADMIN_EXISTS once an admin exists',
        body: BootstrapBody,
        response: { 201: BootstrapResult, ...errorResponses(400, 409, 415, 422, 429) },
      },
    },
    async (request, reply) => {
      const { email, display_name, password } = request.body;
      return reply.status(201).send(await accounts.bootstrap({ email, displayName: display_name, password }));
    },
  );
};

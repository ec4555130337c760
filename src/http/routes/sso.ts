import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { noteAudit } from '../../audit/audit-note.js';
import type { Sso } from '../../auth/sso/index.js';
import { SSO_LOGIN_ACTION } from '../../auth/sso/sso-logins.js';
import { errorResponses, ref } from '../schemas/common.js';
import {
  AcsBody,
  AvailableProvider,
  CallbackQuery,
  LoginQuery,
  Provider,
  ProviderCreateBody,
  ProviderNameParams,
  ProviderReplaceBody,
  SignInParams,
} from '../schemas/sso.js';
import '../route-access.js';
import { addComponentSchemas } from '../schemas/components.js';

const adminTags = ['sso providers'];
const signInTags = ['authentication'];

// Organization routes leave 401 out of their schema: the guard's 401 body has no `code` to serialize.
const Redirect = Type.Null({ description: 'Redirect: the Location header says where' });

// Sign-in answers carry one-time values in their URLs and set cookies: never kept by a cache.
const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store');

/**
 * Single sign-on: managing the organization's identity providers (organization admins), and the
 * public sign-in routes a browser goes through: start, OIDC callback, SAML assertion consumer.
 */
export const ssoRoutes: FastifyPluginAsyncTypebox<{ sso: Sso }> = async (app, { sso }) => {
  addComponentSchemas(app);
  const { providers, logins } = sso;

  app.get(
    '/sso/providers',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'listSsoProviders',
        tags: adminTags,
        summary: 'List SSO providers (secrets are never shown)',
        response: { 200: Type.Array(ref(Provider)), ...errorResponses(403) },
      },
    },
    () => providers.list(),
  );

  app.post(
    '/sso/providers',
    {
      config: { permission: 'organization', action: 'sso_provider.create' },
      schema: {
        operationId: 'createSsoProvider',
        tags: adminTags,
        summary: 'Create an OIDC or SAML provider',
        body: ProviderCreateBody,
        response: { 201: ref(Provider), ...errorResponses(400, 403, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const { name, ...input } = request.body;
      return reply.status(201).send(await providers.create(name, input));
    },
  );

  app.get(
    '/sso/providers/:name',
    {
      config: { permission: 'organization' },
      schema: {
        operationId: 'getSsoProvider',
        tags: adminTags,
        summary: 'Get an SSO provider',
        params: ProviderNameParams,
        response: { 200: ref(Provider), ...errorResponses(403, 404) },
      },
    },
    (request) => providers.get(request.params.name),
  );

  app.put(
    '/sso/providers/:name',
    {
      config: { permission: 'organization', action: 'sso_provider.update' },
      schema: {
        operationId: 'replaceSsoProvider',
        tags: adminTags,
        summary: 'Replace an SSO provider; the name and kind cannot change, secrets not sent are kept',
        params: ProviderNameParams,
        body: ProviderReplaceBody,
        response: { 200: ref(Provider), ...errorResponses(400, 403, 404, 415, 422) },
      },
    },
    (request) => providers.replace(request.params.name, request.body),
  );

  app.delete(
    '/sso/providers/:name',
    {
      config: { permission: 'organization', action: 'sso_provider.delete' },
      schema: {
        operationId: 'deleteSsoProvider',
        tags: adminTags,
        summary: 'Delete an SSO provider and the role bindings its sign-ins made',
        params: ProviderNameParams,
        response: { 204: Type.Null(), ...errorResponses(403, 404) },
      },
    },
    async (request, reply) => {
      await providers.delete(request.params.name);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/auth/sso/providers',
    {
      config: { permission: 'public' },
      schema: {
        operationId: 'listSignInProviders',
        tags: signInTags,
        summary: 'The enabled SSO providers, for a sign-in page: names and where to start',
        response: { 200: Type.Array(AvailableProvider) },
      },
    },
    () => providers.available(),
  );

  app.get(
    '/auth/sso/:provider/login',
    {
      config: { permission: 'public', failureAction: 'auth.sso_start' },
      schema: {
        operationId: 'startSsoLogin',
        tags: signInTags,
        summary: 'Start signing in: redirects (302) to the identity provider',
        params: SignInParams,
        querystring: LoginQuery,
        response: { 302: Redirect, ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      noteAudit(request, { target: `sso_provider:${request.params.provider}` });
      const url = await logins.start(request, reply, request.params.provider, request.query.return_to);
      return noStore(reply).redirect(url, 302);
    },
  );

  app.get(
    '/auth/sso/:provider/callback',
    {
      config: { permission: 'public' },
      schema: {
        operationId: 'finishOidcLogin',
        tags: signInTags,
        summary:
          'OIDC redirect URI: completes the sign-in, sets the session cookie and redirects (302) to the app',
        params: SignInParams,
        querystring: CallbackQuery,
        response: { 302: Redirect, ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      noStore(reply);
      const queryStart = request.url.indexOf('?');
      const target = await logins.finishOidc(request, reply, request.params.provider, {
        state: request.query.state,
        rawQuery: queryStart === -1 ? '' : request.url.slice(queryStart + 1),
      });
      return reply.redirect(target, 302);
    },
  );

  app.get(
    '/auth/sso/:provider/metadata',
    {
      config: { permission: 'public' },
      schema: {
        operationId: 'getSamlMetadata',
        tags: signInTags,
        summary: "SAML: this service's SP metadata (XML), to load into the identity provider",
        params: SignInParams,
        response: {
          200: Type.String({ description: 'application/samlmetadata+xml' }),
          ...errorResponses(404),
        },
      },
    },
    async (request, reply) => {
      const xml = await logins.samlMetadata(request.params.provider);
      return reply.type('application/samlmetadata+xml').send(xml);
    },
  );

  // The assertion consumer service takes the form the identity provider posts; the form parser
  // is registered in this scope only, so every other route still takes JSON alone.
  await app.register(async (scope) => {
    await scope.register(formbody);
    scope.withTypeProvider<TypeBoxTypeProvider>().post(
      '/auth/sso/:provider/acs',
      {
        // Posted by the identity provider's page: another origin, a form body.
        config: { permission: 'public', action: false, refusalAction: SSO_LOGIN_ACTION, crossSite: true },
        schema: {
          operationId: 'finishSamlLogin',
          tags: signInTags,
          summary:
            'SAML assertion consumer service (HTTP-POST): completes the sign-in, sets the session cookie and redirects (302) to the app',
          params: SignInParams,
          consumes: ['application/x-www-form-urlencoded'],
          body: AcsBody,
          response: { 302: Redirect, ...errorResponses(400, 401, 415) },
        },
      },
      async (request, reply) => {
        noStore(reply);
        const { SAMLResponse, RelayState } = request.body;
        const target = await logins.finishSaml(request, reply, request.params.provider, {
          SAMLResponse: typeof SAMLResponse === 'string' ? SAMLResponse : undefined,
          RelayState: typeof RelayState === 'string' ? RelayState : undefined,
        });
        return reply.redirect(target, 302);
      },
    );
  });
};

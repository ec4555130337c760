import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as oidc from 'openid-client';
import type { DatabasePool } from 'slonik';
import type { AuditEvent } from '../../audit/audit-event.js';
import type { AuditLog } from '../../audit/audit-log.js';
import { noteAudit } from '../../audit/audit-note.js';
import { AppError, notFound } from '../../errors/app-error.js';
import type { Sessions } from '../sessions.js';
import type { BrowserBinding } from './browser-binding.js';
import type { ExternalIdentity } from './external-identity.js';
import type { LoginFlows, TakenFlow } from './login-flows.js';
import { OidcFlowData, type OidcLogin } from './oidc-login.js';
import type { SsoProvider } from './provider-settings.js';
import type { ProvidersService } from './providers-service.js';
import { checkReturnTo } from './return-to.js';
import { mapBindings, replaceMappedBindings } from './role-mapping.js';
import { SamlFlowData, type SamlLogin } from './saml-login.js';
import type { ServiceUrls } from './service-urls.js';
import { SsoFailure } from './sso-failure.js';
import { matchUser } from './user-matching.js';

export const SSO_LOGIN_ACTION = 'auth.sso_login';

export interface SsoLoginsDependencies {
  pool: DatabasePool;
  providers: ProvidersService;
  flows: LoginFlows;
  oidc: OidcLogin;
  saml: SamlLogin;
  binding: BrowserBinding;
  sessions: Sessions;
  audit: AuditLog;
  urls: ServiceUrls;
}

/** The answer an OIDC provider sends to the callback, as its query string. */
export interface OidcCallback {
  state: string | undefined;
  /** The query string as received, for openid-client to check parameter by parameter. */
  rawQuery: string;
}

/** The form a SAML provider posts to the ACS URL. */
export interface SamlPost {
  SAMLResponse: string | undefined;
  RelayState: string | undefined;
}

/**
 * Signing in through an identity provider: the start (a flow saved, the browser sent to the
 * provider) and the end (the answer checked, the user matched, its mapped roles replaced, a
 * session started). Every end is recorded in the audit trail, whatever its outcome.
 */
export class SsoLogins {
  constructor(private readonly deps: SsoLoginsDependencies) {}

  /** The URL to send the browser to; 404 for a provider that does not exist or is disabled. */
  async start(request: FastifyRequest, reply: FastifyReply, name: string, returnTo: string | undefined) {
    const { providers, flows } = this.deps;
    const provider = await providers.findEnabled(name);
    if (!provider) throw notFound('SSO provider', name);
    const target = returnTo === undefined ? undefined : checkReturnTo(returnTo);
    const key = oidc.randomState();
    try {
      if (provider.kind === 'oidc') {
        const data: OidcFlowData = {
          kind: 'oidc',
          nonce: oidc.randomNonce(),
          codeVerifier: oidc.randomPKCECodeVerifier(),
          returnTo: target,
          browser: this.deps.binding.bind(request, reply),
        };
        const url = await this.deps.oidc.authorizationUrl(provider, key, data);
        await flows.save(provider.id, key, data);
        return url;
      }
      const data: SamlFlowData = {
        kind: 'saml',
        // The request's ID is an xs:ID, which must not start with a digit.
        requestId: `_${randomBytes(20).toString('hex')}`,
        returnTo: target,
      };
      const url = await this.deps.saml.authorizationUrl(provider, key, data.requestId);
      await flows.save(provider.id, key, data);
      return url;
    } catch (error) {
      if (!(error instanceof SsoFailure)) throw error;
      request.log.warn(
        { provider: name, reason: error.reason, detail: error.detail },
        'SSO sign-in could not start',
      );
      noteAudit(request, { details: { reason: error.reason } });
      throw new AppError('SSO_FAILED', error.message);
    }
  }

  /** The SAML service provider metadata of a provider, to load into the identity provider. */
  async samlMetadata(name: string): Promise<string> {
    const provider = await this.deps.providers.findEnabled(name);
    if (provider?.kind !== 'saml') throw notFound('SAML provider', name);
    return this.deps.saml.metadata(provider);
  }

  /** Completes an OIDC sign-in; returns where to send the browser. */
  finishOidc(
    request: FastifyRequest,
    reply: FastifyReply,
    name: string,
    callback: OidcCallback,
  ): Promise<string> {
    return this.finish(request, reply, name, async (provider) => {
      if (provider.kind !== 'oidc')
        throw new SsoFailure('unknown_provider', 'the provider is not an OIDC provider');
      if (!callback.state) throw new SsoFailure('unknown_flow', 'the answer carries no state');
      const { data } = await this.takeFlow(provider, callback.state, OidcFlowData);
      if (!this.deps.binding.matches(request, data.browser)) {
        throw new SsoFailure('browser_mismatch', 'the browser-binding cookie is missing or differs');
      }
      const identity = await this.deps.oidc.identify(provider, callback.rawQuery, callback.state, data);
      return { identity, returnTo: data.returnTo };
    });
  }

  /** Completes a SAML sign-in; returns where to send the browser. */
  finishSaml(request: FastifyRequest, reply: FastifyReply, name: string, post: SamlPost): Promise<string> {
    return this.finish(request, reply, name, async (provider) => {
      if (provider.kind !== 'saml')
        throw new SsoFailure('unknown_provider', 'the provider is not a SAML provider');
      // Without RelayState the response answers no sign-in of this service: unsolicited
      // (IdP-initiated) responses are refused, they cannot be tied to a request.
      if (!post.RelayState) throw new SsoFailure('unknown_flow', 'the response carries no RelayState');
      const { data, flow } = await this.takeFlow(provider, post.RelayState, SamlFlowData);
      if (!post.SAMLResponse) throw new SsoFailure('invalid_response', 'the form carries no SAMLResponse');
      const identity = await this.deps.saml.identify(provider, post.SAMLResponse, {
        requestId: data.requestId,
        createdAt: flow.createdAt,
      });
      return { identity, returnTo: data.returnTo };
    });
  }

  private async takeFlow<T>(
    provider: SsoProvider,
    key: string,
    schema: { safeParse(data: unknown): { success: true; data: T } | { success: false } },
  ): Promise<{ data: T; flow: TakenFlow }> {
    const flow = await this.deps.flows.take(key);
    if (!flow) throw new SsoFailure('unknown_flow');
    if (flow.providerId !== provider.id)
      throw new SsoFailure('unknown_flow', 'the flow was started for another provider');
    const parsed = schema.safeParse(flow.data);
    if (!parsed.success)
      throw new SsoFailure('unknown_flow', 'the flow was started for another kind of provider');
    return { data: parsed.data, flow };
  }

  private async finish(
    request: FastifyRequest,
    reply: FastifyReply,
    name: string,
    identify: (
      provider: SsoProvider,
    ) => Promise<{ identity: ExternalIdentity; returnTo: string | undefined }>,
  ): Promise<string> {
    const { providers, pool, sessions, urls } = this.deps;
    try {
      const provider = await providers.findEnabled(name);
      if (!provider) throw new SsoFailure('unknown_provider');
      const { identity, returnTo } = await identify(provider);
      const user = await matchUser(pool, identity);
      const bindings = mapBindings(provider.settings.role_mapping, identity.claims);
      await pool.transaction((tx) => replaceMappedBindings(tx, user.id, provider.name, bindings));
      const projectId = await sessions.start(request, reply, user.id);
      await this.record(request, name, {
        actorType: 'user',
        actorId: user.id,
        actorName: user.email,
        outcome: 'success',
        status: 302,
        projectId,
        details: { provider: name, issuer: identity.issuer },
      });
      return returnTo ?? urls.landingPath;
    } catch (error) {
      const failure = error instanceof SsoFailure ? error : undefined;
      await this.record(request, name, {
        actorType: 'anonymous',
        actorName: 'anonymous',
        outcome: failure?.outcome ?? 'failure',
        status: failure ? 401 : 500,
        details: {
          provider: name,
          reason: failure?.reason ?? 'internal_error',
          ...(failure?.detail ? { detail: failure.detail } : {}),
          ...(failure?.email ? { email: failure.email } : {}),
        },
      });
      if (!failure) throw error;
      request.log.info(
        { provider: name, reason: failure.reason, detail: failure.detail },
        'SSO sign-in refused',
      );
      throw new AppError('SSO_FAILED', `single sign-on failed: ${failure.message}`);
    }
  }

  private record(
    request: FastifyRequest,
    provider: string,
    event: Omit<AuditEvent, 'action' | 'target' | 'sourceAddress' | 'requestId'>,
  ): Promise<void> {
    return this.deps.audit.record({
      action: SSO_LOGIN_ACTION,
      target: `sso_provider:${provider}`,
      sourceAddress: request.ip,
      requestId: request.id,
      clientRequestId: request.clientRequestId,
      ...event,
    });
  }
}

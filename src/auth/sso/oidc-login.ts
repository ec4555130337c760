import * as oidc from 'openid-client';
import { z } from 'zod';
import type { Logger } from '../../log/logger.js';
import type { ExternalIdentity } from './external-identity.js';
import { firstString } from './external-identity.js';
import type { OidcProvider } from './provider-settings.js';
import type { ServiceUrls } from './service-urls.js';
import { detailOf, SsoFailure } from './sso-failure.js';

/** What an OIDC sign-in keeps (sealed) between leaving for the provider and coming back. */
export const OidcFlowData = z.object({
  kind: z.literal('oidc'),
  nonce: z.string(),
  codeVerifier: z.string(),
  returnTo: z.string().optional(),
  /** The HMAC of the browser-binding cookie the sign-in started with. */
  browser: z.string(),
});
export type OidcFlowData = z.infer<typeof OidcFlowData>;

// A provider's discovery document and keys change rarely; fetching them once per sign-in would
// make every login depend on one more round trip.
const CONFIGURATION_TTL_MS = 10 * 60_000;
const HTTP_TIMEOUT_SECONDS = 10;

interface CachedConfiguration {
  /** The provider's `updated_at`: an edit makes the cached configuration stale at once. */
  version: string;
  fetchedAt: number;
  configuration: Promise<oidc.Configuration>;
}

/**
 * The OpenID Connect authorization code flow with PKCE (S256), `state` and `nonce`, through
 * openid-client: the authorization request, then the code exchange and the ID token checks
 * (signature, issuer, audience, expiry, nonce) and the userinfo claims.
 */
export class OidcLogin {
  private readonly configurations = new Map<string, CachedConfiguration>();

  constructor(
    private readonly urls: ServiceUrls,
    private readonly allowInsecureIssuers: boolean,
    private readonly logger: Logger,
  ) {}

  /** The authorization request URL; `state` is the key under which the flow is saved. */
  async authorizationUrl(provider: OidcProvider, state: string, data: OidcFlowData): Promise<string> {
    const configuration = await this.configuration(provider);
    return oidc
      .buildAuthorizationUrl(configuration, {
        redirect_uri: this.urls.oidcRedirectUri(provider.name),
        scope: provider.settings.scopes,
        state,
        nonce: data.nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(data.codeVerifier),
        code_challenge_method: 'S256',
      })
      .toString();
  }

  /**
   * Checks the authorization response (the callback's query string) against the saved flow,
   * exchanges the code and returns who signed in.
   */
  async identify(
    provider: OidcProvider,
    query: string,
    state: string,
    data: OidcFlowData,
  ): Promise<ExternalIdentity> {
    const configuration = await this.configuration(provider);
    const currentUrl = new URL(this.urls.oidcRedirectUri(provider.name));
    currentUrl.search = query;
    let claims: Record<string, unknown>;
    try {
      const tokens = await oidc.authorizationCodeGrant(configuration, currentUrl, {
        expectedState: state,
        expectedNonce: data.nonce,
        pkceCodeVerifier: data.codeVerifier,
        idTokenExpected: true,
      });
      const idToken = tokens.claims();
      if (!idToken) throw new SsoFailure('invalid_response', 'the token response holds no ID token');
      claims = { ...idToken };
      // Many providers put e-mail, name and groups only in userinfo when an access token is issued.
      if (configuration.serverMetadata().userinfo_endpoint) {
        const info = await oidc.fetchUserInfo(configuration, tokens.access_token, idToken.sub);
        claims = { ...idToken, ...info, ...idTokenProtocolClaims(idToken) };
      }
    } catch (error) {
      throw this.failure(error);
    }
    const fullName = [firstString(claims.given_name), firstString(claims.family_name)]
      .filter(Boolean)
      .join(' ');
    return {
      issuer: String(claims.iss),
      subject: String(claims.sub),
      email: firstString(claims.email),
      emailVerified: booleanClaim(claims.email_verified),
      displayName: firstString(claims.name) ?? (fullName || firstString(claims.preferred_username)),
      claims,
    };
  }

  private failure(error: unknown): SsoFailure {
    if (error instanceof SsoFailure) return error;
    if (error instanceof oidc.AuthorizationResponseError) {
      // The provider's own refusal (access_denied, login_required, ...): its code is safe to keep.
      return new SsoFailure(
        'idp_refused',
        `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`,
      );
    }
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${detailOf(error.cause)})` : '';
    return new SsoFailure('invalid_response', `${detailOf(error)}${cause}`.slice(0, 300));
  }

  private configuration(provider: OidcProvider): Promise<oidc.Configuration> {
    const cached = this.configurations.get(provider.id);
    if (
      cached &&
      cached.version === provider.updated_at &&
      Date.now() - cached.fetchedAt < CONFIGURATION_TTL_MS
    ) {
      return cached.configuration;
    }
    const configuration = this.discover(provider);
    this.configurations.set(provider.id, {
      version: provider.updated_at,
      fetchedAt: Date.now(),
      configuration,
    });
    // A failed discovery is not kept: the next sign-in tries again.
    configuration.catch(() => {
      if (this.configurations.get(provider.id)?.configuration === configuration)
        this.configurations.delete(provider.id);
    });
    return configuration;
  }

  private async discover(provider: OidcProvider): Promise<oidc.Configuration> {
    const { issuer, client_id } = provider.settings;
    const secret = provider.secrets.client_secret;
    const insecure = this.allowInsecureIssuers && new URL(issuer).protocol === 'http:';
    let discovered: oidc.Configuration;
    try {
      discovered = await oidc.discovery(new URL(issuer), client_id, secret, undefined, {
        timeout: HTTP_TIMEOUT_SECONDS,
        ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
      });
    } catch (error) {
      // Every sign-in through this provider fails until it answers: worth a line in the log.
      this.logger.warn({ provider: provider.name, issuer, err: error }, 'OIDC discovery failed');
      throw new SsoFailure('idp_unreachable', `discovery at ${issuer} failed: ${detailOf(error)}`);
    }
    // client_secret_basic is the OpenID default; post only for providers that offer nothing else.
    const server = discovered.serverMetadata();
    const methods = server.token_endpoint_auth_methods_supported;
    const authentication =
      !methods || methods.includes('client_secret_basic') || !methods.includes('client_secret_post')
        ? oidc.ClientSecretBasic(secret)
        : oidc.ClientSecretPost(secret);
    const configuration = new oidc.Configuration(server, client_id, secret, authentication);
    configuration.timeout = HTTP_TIMEOUT_SECONDS;
    if (insecure) oidc.allowInsecureRequests(configuration);
    return configuration;
  }
}

/** The ID token's protocol claims win over userinfo's: they are what was checked. */
function idTokenProtocolClaims(idToken: oidc.IDToken): Record<string, unknown> {
  const { iss, sub, aud, exp, iat, nonce, azp, auth_time } = idToken;
  return Object.fromEntries(
    Object.entries({ iss, sub, aud, exp, iat, nonce, azp, auth_time }).filter(([, v]) => v !== undefined),
  );
}

// Some providers send `email_verified` as the string "true".
function booleanClaim(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}

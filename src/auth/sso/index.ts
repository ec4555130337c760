import type { DatabasePool } from 'slonik';
import type { AuditLog } from '../../audit/audit-log.js';
import type { Logger } from '../../log/logger.js';
import type { SecretBox } from '../../secrets/secret-box.js';
import type { SecretHasher } from '../secret-token.js';
import type { Sessions } from '../sessions.js';
import { BrowserBinding } from './browser-binding.js';
import { LoginFlows } from './login-flows.js';
import { OidcLogin } from './oidc-login.js';
import { ProvidersService } from './providers-service.js';
import { ProvidersStore } from './providers-store.js';
import { SamlLogin } from './saml-login.js';
import { ServiceUrls } from './service-urls.js';
import { SsoLogins } from './sso-logins.js';

export interface SsoOptions {
  pool: DatabasePool;
  /** Seals the providers' secrets and the sign-ins under way. */
  secrets: SecretBox;
  /** Hashes the keys of the sign-ins under way (OIDC state, SAML RelayState). */
  hasher: SecretHasher;
  sessions: Sessions;
  audit: AuditLog;
  /**
   * The service's address as browsers reach it (config `auth.public_url`), e.g.
   * `https://replicator.example.com`: the OIDC redirect_uri, the SAML ACS URL and the default SP
   * entity id derive from it, never from a request's Host header.
   */
  publicUrl: string;
  logger: Logger;
  /**
   * Lets identity provider URLs (OIDC issuer, SAML entry point) be plain http on a loopback
   * address. For tests and local trials only; never settable through the API.
   */
  allowInsecureIssuers?: boolean;
}

/** What the SSO routes need: provider management and the sign-in flows. */
export interface Sso {
  providers: ProvidersService;
  logins: SsoLogins;
}

/** Builds single sign-on (OIDC and SAML 2.0) for authentication mode `enabled`. */
export function createSso(options: SsoOptions): Sso {
  const { pool, secrets, hasher, sessions, audit, logger } = options;
  const urls = new ServiceUrls(options.publicUrl);
  const allowInsecureIssuers = options.allowInsecureIssuers ?? false;
  const providers = new ProvidersService(pool, new ProvidersStore(secrets), { urls, allowInsecureIssuers });
  const ssoLogger = logger.child({ component: 'sso' });
  const logins = new SsoLogins({
    pool,
    providers,
    flows: new LoginFlows(pool, secrets, hasher),
    oidc: new OidcLogin(urls, allowInsecureIssuers, ssoLogger),
    saml: new SamlLogin(urls),
    binding: new BrowserBinding(urls, hasher),
    sessions,
    audit,
    urls,
  });
  return { providers, logins };
}

export type { ProviderInput } from './provider-input.js';
export type { ProviderView } from './providers-service.js';
export type { SsoLogins } from './sso-logins.js';

import type { CacheProvider, Profile, SAML, SamlConfig } from '@node-saml/node-saml';
import { z } from 'zod';
import { type ExternalIdentity, firstString } from './external-identity.js';
import { LOGIN_FLOW_TTL_MS } from './login-flows.js';
import type { SamlProvider } from './provider-settings.js';
import type { ServiceUrls } from './service-urls.js';
import { detailOf, SsoFailure, type SsoFailureReason } from './sso-failure.js';

/** What a SAML sign-in keeps (sealed) between the AuthnRequest and the response. */
export const SamlFlowData = z.object({
  kind: z.literal('saml'),
  /** The AuthnRequest's ID: the response must name it in InResponseTo. */
  requestId: z.string(),
  returnTo: z.string().optional(),
});
export type SamlFlowData = z.infer<typeof SamlFlowData>;

// Clocks of the provider and the service may differ a little.
const CLOCK_SKEW_MS = 60_000;

/**
 * node-saml and its XML stack (some 150 modules, 3 MB of heap), loaded with the first SAML
 * sign-in rather than with the service: most services have no SAML provider.
 */
let nodeSaml: Promise<typeof import('@node-saml/node-saml')> | undefined;
const loadNodeSaml = () => {
  nodeSaml ??= import('@node-saml/node-saml');
  return nodeSaml;
};

const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const NAME_ATTRIBUTES = [
  'name',
  'displayName',
  'urn:oid:2.16.840.1.113730.3.1.241',
  'http://schemas.microsoft.com/identity/claims/displayname',
];

/**
 * node-saml's InResponseTo check, over the one flow this response may answer: the flow was already
 * taken (deleted) from the database, so a second use of the same response finds nothing.
 */
class TakenFlowCache implements CacheProvider {
  constructor(private readonly flow?: { requestId: string; createdAt: string }) {}

  async saveAsync(): Promise<null> {
    return null;
  }

  async getAsync(key: string): Promise<string | null> {
    return this.flow && key === this.flow.requestId ? this.flow.createdAt : null;
  }

  async removeAsync(): Promise<null> {
    return null;
  }
}

/**
 * SAML 2.0 Web Browser SSO through node-saml: an AuthnRequest over the HTTP-Redirect binding and a
 * response over HTTP-POST. Assertions must be signed by one of the configured certificates; the
 * response must answer the request this flow sent, come from the configured issuer and be meant
 * for this service (audience, recipient).
 */
export class SamlLogin {
  constructor(private readonly urls: ServiceUrls) {}

  async authorizationUrl(provider: SamlProvider, relayState: string, requestId: string): Promise<string> {
    return (await this.saml(provider, { generateUniqueId: () => requestId })).getAuthorizeUrlAsync(
      relayState,
      undefined,
      {},
    );
  }

  /** The service provider metadata to give the identity provider. */
  async metadata(provider: SamlProvider): Promise<string> {
    return (await this.saml(provider)).generateServiceProviderMetadata(null);
  }

  async identify(
    provider: SamlProvider,
    samlResponse: string,
    flow: { requestId: string; createdAt: string },
  ): Promise<ExternalIdentity> {
    const saml = await this.saml(provider, { cacheProvider: new TakenFlowCache(flow) });
    const { SamlStatusError } = await loadNodeSaml();
    let profile: Profile | null;
    try {
      ({ profile } = await saml.validatePostResponseAsync({ SAMLResponse: samlResponse }));
    } catch (error) {
      throw new SsoFailure(
        error instanceof SamlStatusError ? 'idp_refused' : classify(error),
        detailOf(error),
      );
    }
    if (!profile) throw new SsoFailure('invalid_response', 'the response holds no assertion');
    // node-saml checks the issuer of logout messages only; the assertion's is checked here.
    if (profile.issuer !== provider.settings.idp_issuer) {
      throw new SsoFailure('issuer_mismatch', `assertion issuer is ${String(profile.issuer).slice(0, 200)}`);
    }
    this.checkSubjectConfirmation(provider, profile, flow.requestId);
    const attributes = (profile.attributes ?? {}) as Record<string, unknown>;
    const nameId = profile.nameID ?? '';
    const emailFromNameId = EMAIL_PATTERN.test(nameId) ? nameId : undefined;
    return {
      issuer: provider.settings.idp_issuer,
      subject: nameId,
      email: firstString(profile.email) ?? firstString(attributes.email) ?? emailFromNameId,
      emailVerified: undefined,
      displayName: NAME_ATTRIBUTES.map((name) => firstString(attributes[name])).find(Boolean),
      claims: attributes,
    };
  }

  /**
   * The signed assertion's own bearer confirmation must answer this flow's request and name this
   * service's ACS URL. node-saml otherwise accepts the response's InResponseTo, which sits outside
   * the signed assertion when only the assertion is signed.
   */
  private checkSubjectConfirmation(provider: SamlProvider, profile: Profile, requestId: string): void {
    const assertion = (profile.getAssertion?.() as { Assertion?: XmlNode } | undefined)?.Assertion;
    const confirmations = (assertion?.Subject?.[0]?.SubjectConfirmation ?? []).flatMap(
      (confirmation) => confirmation.SubjectConfirmationData ?? [],
    );
    const answering = confirmations.find((data) => data.$?.InResponseTo === requestId);
    if (!answering) {
      throw new SsoFailure('in_response_to_mismatch', 'no subject confirmation answers this sign-in request');
    }
    const recipient = answering.$?.Recipient;
    const acsUrl = this.urls.samlAcsUrl(provider.name);
    if (recipient !== undefined && recipient !== acsUrl) {
      throw new SsoFailure(
        'recipient_mismatch',
        `subject confirmation recipient is ${recipient.slice(0, 200)}`,
      );
    }
  }

  private async saml(provider: SamlProvider, extra: Partial<SamlConfig> = {}): Promise<SAML> {
    const { settings, secrets } = provider;
    const { SAML, ValidateInResponseTo } = await loadNodeSaml();
    return new SAML({
      entryPoint: settings.entry_point,
      issuer: settings.sp_entity_id,
      audience: settings.sp_entity_id,
      callbackUrl: this.urls.samlAcsUrl(provider.name),
      idpCert: settings.idp_certificates,
      idpIssuer: settings.idp_issuer,
      // Always: an unsigned assertion is refused even inside a signed response.
      wantAssertionsSigned: true,
      // Many providers sign the assertion only; the assertion's signature is what is required.
      wantAuthnResponseSigned: false,
      validateInResponseTo: ValidateInResponseTo.always,
      requestIdExpirationPeriodMs: LOGIN_FLOW_TTL_MS,
      cacheProvider: new TakenFlowCache(),
      acceptedClockSkewMs: CLOCK_SKEW_MS,
      // The provider's configured NameID format is used; asking for one it lacks fails the sign-in.
      identifierFormat: null,
      // Asking for password authentication would refuse sign-ins made with MFA or Kerberos.
      disableRequestedAuthnContext: true,
      ...(secrets.sp_private_key ? { privateKey: secrets.sp_private_key, signatureAlgorithm: 'sha256' } : {}),
      ...extra,
    });
  }
}

interface XmlNode {
  $?: Record<string, string>;
  [child: string]: XmlNode[] | Record<string, string> | string | undefined;
  Subject?: XmlNode[];
  SubjectConfirmation?: XmlNode[];
  SubjectConfirmationData?: XmlNode[];
}

/** The failure an error of node-saml's other than a status from the provider stands for. */
function classify(error: unknown): SsoFailureReason {
  const message = error instanceof Error ? error.message : '';
  if (/signature|Cannot obtain assertion/i.test(message)) return 'invalid_signature';
  if (/audience/i.test(message)) return 'audience_mismatch';
  if (/InResponseTo/i.test(message)) return 'in_response_to_mismatch';
  // node-saml skips confirmations outside their validity window, then finds none valid.
  if (/expired|not yet valid|No valid subject confirmation/i.test(message)) return 'expired_response';
  return 'invalid_response';
}

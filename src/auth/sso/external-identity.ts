/** Who an identity provider says signed in, in the same shape for OIDC and SAML. */
export interface ExternalIdentity {
  /** The OIDC issuer, or the SAML identity provider's entity id. */
  issuer: string;
  /** The OIDC `sub`, or the SAML NameID: stable per user at that issuer. */
  subject: string;
  email: string | undefined;
  /** The provider's `email_verified`, when it says. */
  emailVerified: boolean | undefined;
  displayName: string | undefined;
  /** Every claim or attribute, for the role mapping. */
  claims: Record<string, unknown>;
}

/** The first string among a claim's values (SAML attributes may be lists). */
export function firstString(value: unknown): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' && first.trim() !== '' ? first.trim() : undefined;
}

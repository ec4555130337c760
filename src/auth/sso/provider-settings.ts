import { z } from 'zod';
import { ROLES, SCOPE_TYPES } from '../roles.js';

export const PROVIDER_KINDS = ['oidc', 'saml'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

export const DEFAULT_OIDC_SCOPES = 'openid email profile';

/**
 * One rule of a role mapping as stored: the scope is kept by id, so that renaming a project or
 * workspace does not silently detach the rule; the API shows the scope's current name.
 */
const StoredRoleRule = z.object({
  value: z.string(),
  role: z.enum(ROLES),
  scope_type: z.enum(SCOPE_TYPES),
  scope_id: z.string(),
});
export type StoredRoleRule = z.infer<typeof StoredRoleRule>;

export const StoredRoleMapping = z.object({
  /** The claim (OIDC) or attribute (SAML) whose values the rules match, e.g. `groups`. */
  claim: z.string(),
  rules: z.array(StoredRoleRule),
  /** Bound at the default project when no rule matched. */
  default_role: z.enum(ROLES).optional(),
});
export type StoredRoleMapping = z.infer<typeof StoredRoleMapping>;

export const OidcSettings = z.object({
  issuer: z.string(),
  client_id: z.string(),
  scopes: z.string(),
  role_mapping: StoredRoleMapping.optional(),
});
export type OidcSettings = z.infer<typeof OidcSettings>;

export const OidcSecrets = z.object({ client_secret: z.string() });
export type OidcSecrets = z.infer<typeof OidcSecrets>;

export const SamlSettings = z.object({
  entry_point: z.string(),
  idp_issuer: z.string(),
  /** PEM certificates whose keys may sign assertions (several while the provider rolls its key). */
  idp_certificates: z.array(z.string()).min(1),
  sp_entity_id: z.string(),
  role_mapping: StoredRoleMapping.optional(),
});
export type SamlSettings = z.infer<typeof SamlSettings>;

export const SamlSecrets = z.object({ sp_private_key: z.string().optional() });
export type SamlSecrets = z.infer<typeof SamlSecrets>;

interface ProviderBase {
  id: string;
  name: string;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

/** A provider as the service uses it: settings parsed, secrets opened. */
export type SsoProvider =
  | (ProviderBase & { kind: 'oidc'; settings: OidcSettings; secrets: OidcSecrets })
  | (ProviderBase & { kind: 'saml'; settings: SamlSettings; secrets: SamlSecrets });

export type OidcProvider = Extract<SsoProvider, { kind: 'oidc' }>;
export type SamlProvider = Extract<SsoProvider, { kind: 'saml' }>;

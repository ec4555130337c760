import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { CommonQueryMethods } from 'slonik';
import { AppError, validationFailed } from '../../errors/app-error.js';
import {
  DEFAULT_OIDC_SCOPES,
  type OidcSecrets,
  type OidcSettings,
  PROVIDER_KINDS,
  type ProviderKind,
  type SamlSecrets,
  type SamlSettings,
  type SsoProvider,
} from './provider-settings.js';
import type { ProviderWrite } from './providers-store.js';
import { type RoleMappingInput, resolveRoleMapping } from './role-mapping.js';
import type { ServiceUrls } from './service-urls.js';

/** A provider as the API takes it (create and replace): one flat object, fields by kind. */
export interface ProviderInput {
  kind: string;
  enabled?: boolean;
  issuer?: string;
  client_id?: string;
  /** Write-only. On replace, omitted keeps the stored one. */
  client_secret?: string;
  scopes?: string;
  entry_point?: string;
  idp_issuer?: string;
  idp_certificates?: string[];
  sp_entity_id?: string;
  /** Write-only. On replace, omitted keeps the stored one and null removes it. */
  sp_private_key?: string | null;
  role_mapping?: RoleMappingInput;
}

const OIDC_FIELDS = ['issuer', 'client_id', 'client_secret', 'scopes'] as const;
const SAML_FIELDS = [
  'entry_point',
  'idp_issuer',
  'idp_certificates',
  'sp_entity_id',
  'sp_private_key',
] as const;

export interface InputPolicy {
  urls: ServiceUrls;
  /** Lets identity provider URLs be plain http on a loopback address (tests, local trials). */
  allowInsecureIssuers: boolean;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Whether a URL may name an identity provider: https, or http on loopback when the policy allows it. */
function isAllowedIdpUrl(url: URL, allowInsecure: boolean): boolean {
  if (url.protocol === 'https:') return true;
  return allowInsecure && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

function idpUrl(field: string, value: string, policy: InputPolicy, allowQuery: boolean): string {
  const rule = policy.allowInsecureIssuers ? 'an https URL (or http on a loopback address)' : 'an https URL';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw validationFailed(field, `must be ${rule}`);
  }
  if (!isAllowedIdpUrl(url, policy.allowInsecureIssuers)) throw validationFailed(field, `must be ${rule}`);
  if (url.username || url.password || url.hash || (!allowQuery && url.search)) {
    throw validationFailed(
      field,
      `must be ${rule} without credentials${allowQuery ? '' : ', query'} or fragment`,
    );
  }
  return value;
}

function required<T>(field: string, value: T | undefined): T {
  if (value === undefined) throw new AppError('BAD_REQUEST', `${field}: is required`);
  return value;
}

function nonEmpty(field: string, value: string): string {
  const trimmed = value.trim();
  if (trimmed === '') throw validationFailed(field, 'must not be empty');
  return trimmed;
}

// RFC 6749 §3.3: scope tokens are printable ASCII without space, `"` or `\`.
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

function scopes(value: string | undefined): string {
  const tokens = (value ?? DEFAULT_OIDC_SCOPES).split(/\s+/).filter(Boolean);
  if (!tokens.every((token) => SCOPE_TOKEN.test(token))) {
    throw validationFailed(
      'scopes',
      'must be scope names separated by spaces, such as "openid email profile"',
    );
  }
  if (!tokens.includes('openid')) throw validationFailed('scopes', 'must include openid');
  return [...new Set(tokens)].join(' ');
}

/** A PEM certificate, or the base64 body of one as some providers show it. */
function certificate(field: string, value: string): string {
  const text = value.trim();
  const pem = text.includes('-----BEGIN')
    ? text
    : `-----BEGIN CERTIFICATE-----\n${text.replace(/\s+/g, '')}\n-----END CERTIFICATE-----`;
  try {
    return new X509Certificate(pem).toString().trim();
  } catch {
    throw validationFailed(field, 'must be a PEM certificate');
  }
}

function privateKey(value: string): string {
  const text = value.trim();
  try {
    createPrivateKey(text);
  } catch {
    throw validationFailed('sp_private_key', 'must be an unencrypted PEM private key');
  }
  return text;
}

/**
 * Checks a create or replace request and turns it into what is stored. On replace, the kind cannot
 * change, and secrets that are not sent are kept.
 */
export async function buildProviderWrite(
  db: CommonQueryMethods,
  name: string,
  input: ProviderInput,
  existing: SsoProvider | undefined,
  policy: InputPolicy,
): Promise<ProviderWrite> {
  if (!(PROVIDER_KINDS as readonly string[]).includes(input.kind)) {
    throw validationFailed('kind', `must be one of ${PROVIDER_KINDS.join(', ')}`);
  }
  const kind = input.kind as ProviderKind;
  if (existing && existing.kind !== kind) {
    throw validationFailed(
      'kind',
      `cannot change from ${existing.kind}; delete the provider and create it again`,
    );
  }
  const foreign = kind === 'oidc' ? SAML_FIELDS : OIDC_FIELDS;
  for (const field of foreign) {
    if (input[field] !== undefined)
      throw new AppError('BAD_REQUEST', `${field}: is not a field of a ${kind} provider`);
  }
  const role_mapping = input.role_mapping ? await resolveRoleMapping(db, input.role_mapping) : undefined;
  const enabled = input.enabled ?? true;

  if (kind === 'oidc') {
    const settings: OidcSettings = {
      // Kept exactly as given: it must equal the issuer the provider's discovery document names.
      issuer: idpUrl('issuer', required('issuer', input.issuer), policy, false),
      client_id: nonEmpty('client_id', required('client_id', input.client_id)),
      scopes: scopes(input.scopes),
      ...(role_mapping ? { role_mapping } : {}),
    };
    const keptSecret = existing?.kind === 'oidc' ? existing.secrets.client_secret : undefined;
    const secret = input.client_secret ?? keptSecret;
    const secrets: OidcSecrets = {
      client_secret: nonEmpty('client_secret', required('client_secret', secret)),
    };
    return { kind, enabled, settings, secrets };
  }

  const certificates = required('idp_certificates', input.idp_certificates);
  if (certificates.length === 0)
    throw validationFailed('idp_certificates', 'must hold at least one certificate');
  const settings: SamlSettings = {
    entry_point: idpUrl('entry_point', required('entry_point', input.entry_point), policy, true),
    idp_issuer: nonEmpty('idp_issuer', required('idp_issuer', input.idp_issuer)),
    idp_certificates: certificates.map((pem, index) => certificate(`idp_certificates[${index}]`, pem)),
    sp_entity_id: nonEmpty('sp_entity_id', input.sp_entity_id ?? policy.urls.samlMetadataUrl(name)),
    ...(role_mapping ? { role_mapping } : {}),
  };
  const keptKey = existing?.kind === 'saml' ? existing.secrets.sp_private_key : undefined;
  const key = input.sp_private_key === undefined ? keptKey : input.sp_private_key;
  const secrets: SamlSecrets = key ? { sp_private_key: privateKey(key) } : {};
  return { kind, enabled, settings, secrets };
}

import { Type } from 'typebox';
import { ROLES, SCOPE_TYPES } from '../../auth/roles.js';
import { DEFAULT_OIDC_SCOPES } from '../../auth/sso/provider-settings.js';
import { Name, Timestamp } from './common.js';

/** What no name can hold: control characters (PostgreSQL text cannot even hold NUL). */
const NO_CONTROL_CHARACTERS = '^[^\\u0000-\\u001F\\u007F-\\u009F]*$';

const Url = (description: string) => Type.String({ minLength: 1, maxLength: 2048, description });
const Pem = (description: string) => Type.String({ minLength: 1, maxLength: 64 * 1024, description });

const RoleName = Type.Union(
  ROLES.map((role) => Type.Literal(role)),
  { description: ROLES.join(', ') },
);
const ScopeType = Type.Union(
  SCOPE_TYPES.map((scope) => Type.Literal(scope)),
  { description: SCOPE_TYPES.join(', ') },
);

const RoleRule = Type.Object(
  {
    value: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'A value of the claim, e.g. the group "data-eng"',
    }),
    role: RoleName,
    scope_type: ScopeType,
    scope: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'The project or workspace name; omitted for scope_type organization',
      }),
    ),
  },
  { additionalProperties: false },
);

const RoleMapping = Type.Object(
  {
    claim: Type.String({
      minLength: 1,
      maxLength: 256,
      description:
        'The OIDC claim or SAML attribute holding the groups, e.g. "groups" (a dotted path reaches nested claims)',
    }),
    rules: Type.Array(RoleRule, {
      maxItems: 500,
      description: 'Every rule whose value the claim holds binds its role',
    }),
    default_role: Type.Optional(
      Type.Union(
        ROLES.map((role) => Type.Literal(role)),
        { description: 'Bound at the default project when no rule matched' },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      "Maps the identity provider's groups to roles at every sign-in: the bindings of this provider are replaced, manual bindings are kept",
  },
);

const providerFields = {
  kind: Type.String({ description: 'oidc or saml' }),
  enabled: Type.Optional(
    Type.Boolean({ description: 'Whether sign-in through the provider is offered (default true)' }),
  ),
  issuer: Type.Optional(Url('OIDC: the issuer URL (https), whose discovery document is read')),
  client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'OIDC: the client id' })),
  client_secret: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description:
        'OIDC: the client secret; write-only, stored encrypted; on replace, omitted keeps the stored one',
    }),
  ),
  scopes: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1024,
      description: `OIDC: scopes to ask for (default "${DEFAULT_OIDC_SCOPES}")`,
    }),
  ),
  entry_point: Type.Optional(Url("SAML: the identity provider's single sign-on URL (HTTP-Redirect binding)")),
  idp_issuer: Type.Optional(
    Type.String({ minLength: 1, maxLength: 2048, description: "SAML: the identity provider's entity id" }),
  ),
  idp_certificates: Type.Optional(
    Type.Array(Pem('a PEM certificate'), {
      minItems: 1,
      maxItems: 10,
      description: 'SAML: the certificates whose keys may sign assertions (assertions must be signed)',
    }),
  ),
  sp_entity_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        "SAML: this service's entity id, the audience assertions must name (default: the metadata URL)",
    }),
  ),
  role_mapping: Type.Optional(RoleMapping),
};

export const ProviderCreateBody = Type.Object(
  {
    name: Name,
    ...providerFields,
    sp_private_key: Type.Optional(
      Pem('SAML: a PEM private key to sign AuthnRequests with; write-only, stored encrypted'),
    ),
  },
  { additionalProperties: false },
);

export const ProviderReplaceBody = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'If given, must equal the name in the path' })),
    ...providerFields,
    sp_private_key: Type.Optional(
      Type.Union([Pem('a PEM private key'), Type.Null()], {
        description: 'SAML: write-only; omitted keeps the stored key, null removes it',
      }),
    ),
  },
  { additionalProperties: false },
);

export const Provider = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    kind: Type.Union([Type.Literal('oidc'), Type.Literal('saml')]),
    enabled: Type.Boolean(),
    login_url: Type.String({ description: 'Where a browser starts signing in' }),
    issuer: Type.Optional(Type.String()),
    client_id: Type.Optional(Type.String()),
    client_secret_set: Type.Optional(
      Type.Boolean({ description: 'OIDC: whether a client secret is stored (never shown)' }),
    ),
    scopes: Type.Optional(Type.String()),
    redirect_uri: Type.Optional(
      Type.String({ description: 'OIDC: the redirect URI to register at the provider' }),
    ),
    entry_point: Type.Optional(Type.String()),
    idp_issuer: Type.Optional(Type.String()),
    idp_certificates: Type.Optional(Type.Array(Type.String())),
    sp_entity_id: Type.Optional(Type.String()),
    sp_private_key_set: Type.Optional(
      Type.Boolean({ description: 'SAML: whether a private key is stored (never shown)' }),
    ),
    acs_url: Type.Optional(
      Type.String({ description: 'SAML: the assertion consumer service URL (HTTP-POST)' }),
    ),
    metadata_url: Type.Optional(Type.String({ description: "SAML: this service's SP metadata" })),
    role_mapping: Type.Optional(
      Type.Object({
        claim: Type.String(),
        rules: Type.Array(
          Type.Object({
            value: Type.String(),
            role: Type.String(),
            scope_type: Type.String(),
            scope: Type.Optional(
              Type.Union([Type.String(), Type.Null()], {
                description:
                  'The current name; null once the project or workspace is deleted (the rule then binds nothing)',
              }),
            ),
          }),
        ),
        default_role: Type.Optional(Type.String()),
      }),
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'SsoProvider' },
);

export const AvailableProvider = Type.Object({
  name: Type.String(),
  kind: Type.String(),
  login_url: Type.String(),
});

const ProviderName = Type.String({
  pattern: NO_CONTROL_CHARACTERS,
  description: 'an SSO provider name, without control characters',
});

export const ProviderNameParams = Type.Object({ name: ProviderName });
export const SignInParams = Type.Object({ provider: ProviderName });

export const LoginQuery = Type.Object(
  {
    return_to: Type.Optional(
      Type.String({ maxLength: 2048, description: 'A path on this service to return to after signing in' }),
    ),
  },
  { additionalProperties: false },
);

export const CallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String()),
    state: Type.Optional(Type.String()),
    iss: Type.Optional(Type.String()),
    error: Type.Optional(Type.String()),
    error_description: Type.Optional(Type.String()),
  },
  {
    // The identity provider decides what else it sends (session_state, scope, ...).
    additionalProperties: true,
    description: "The identity provider's authorization response",
  },
);

export const AcsBody = Type.Object(
  {
    SAMLResponse: Type.Optional(Type.String({ description: 'The base64 SAML response' })),
    RelayState: Type.Optional(Type.String()),
  },
  {
    additionalProperties: true,
    description: 'application/x-www-form-urlencoded, as the identity provider posts it',
  },
);

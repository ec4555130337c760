import { Type } from 'typebox';
import { EMAIL_MAX_LENGTH } from '../../auth/account-service.js';
import { PASSWORD_MAX_LENGTH } from '../../auth/password.js';
import { ROLES, type Role } from '../../auth/roles.js';
import { TOKEN_DEFAULT_LIFETIME_HOURS, TOKEN_MAX_LIFETIME_HOURS } from '../../auth/token-service.js';
import { ref, Timestamp } from './common.js';

const Email = Type.String({ minLength: 3, maxLength: EMAIL_MAX_LENGTH, description: 'e-mail address' });
const Password = Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH });
export const RoleName = Type.Unsafe<Role>(
  Type.Union(
    ROLES.map((role) => Type.Literal(role)),
    { description: ROLES.join(', ') },
  ),
);

export const User = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    display_name: Type.String(),
    disabled: Type.Boolean({ description: 'a disabled user cannot sign in, and its tokens stop working' }),
    password_set: Type.Boolean({ description: 'false for users who sign in only through SSO' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'User' },
);

export const BootstrapBody = Type.Object(
  {
    email: Email,
    display_name: Type.String({ minLength: 1, maxLength: 200 }),
    password: Type.String({
      maxLength: PASSWORD_MAX_LENGTH,
      description: 'at least 12 characters, at most 256, not a common or easily guessed password',
    }),
  },
  { additionalProperties: false },
);

export const BootstrapResult = Type.Object({
  user: ref(User),
  role_binding: Type.Object({ role: Type.String(), scope_type: Type.String(), scope_id: Type.String() }),
});

export const LoginBody = Type.Object(
  {
    email: Email,
    password: Password,
    project: Type.Optional(Type.String({ description: 'the project (name or id) to start in' })),
  },
  { additionalProperties: false },
);

export const SessionInfo = Type.Object(
  {
    user: Type.Object({ id: Type.String(), email: Type.String(), display_name: Type.String() }),
    via: Type.Union([Type.Literal('session'), Type.Literal('token')], {
      description: 'how this request was signed in',
    }),
    project: Type.Object({ id: Type.String(), name: Type.String() }, { description: 'the active project' }),
    role: Type.Union([RoleName, Type.Null()], { description: 'the role held in the active project' }),
    organization_admin: Type.Boolean(),
    projects: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), role: RoleName }), {
      description: 'projects the user holds a role in, to switch to',
    }),
  },
  { $id: 'SessionInfo' },
);

export const SwitchProjectBody = Type.Object(
  { project: Type.String({ minLength: 1, description: 'project name or id' }) },
  { additionalProperties: false },
);

export const Token = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    user_id: Type.String(),
    project_id: Type.String(),
    role: Type.Union([RoleName, Type.Null()], {
      description: "a cap below the user's role; null: the user's role",
    }),
    prefix: Type.String({ description: 'the first characters of the secret' }),
    created_at: Timestamp,
    expires_at: Timestamp,
    revoked_at: Type.Union([Timestamp, Type.Null()]),
    last_used_at: Type.Union([Timestamp, Type.Null()]),
  },
  { $id: 'Token' },
);

export const CreatedToken = Type.Intersect(
  [
    ref(Token),
    Type.Object({
      token: Type.String({ description: 'the secret: shown once, send as Authorization: Bearer' }),
    }),
  ],
  { $id: 'CreatedToken' },
);

export const TokenCreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    lifetime_hours: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: TOKEN_MAX_LIFETIME_HOURS,
        description: `hours until the token expires (default ${TOKEN_DEFAULT_LIFETIME_HOURS}, at most ${TOKEN_MAX_LIFETIME_HOURS})`,
      }),
    ),
    role: Type.Optional(RoleName),
  },
  { additionalProperties: false },
);

export const IdParams = Type.Object({ id: Type.String({ pattern: '^[^\\u0000-\\u001F]*$' }) });

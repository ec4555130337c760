import { Type } from 'typebox';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../auth/password.js';
import { ROLES, SCOPE_TYPES } from '../../auth/roles.js';
import { Name, Timestamp, UUID_PATTERN } from './common.js';

/**
 * An id in a path. Any string is taken: one that is not a UUID names nothing, so it is a 404 like
 * any other unknown id (the service checks it before any query).
 */
export const IdParams = Type.Object({ id: Type.String({ description: 'the record id (a UUID)' }) });

/** A record a body or query names by id: a malformed one is a 422 on its field. */
const IdReference = (what: string) =>
  Type.String({ pattern: UUID_PATTERN, description: `the id of ${what} (a UUID)` });

const Email = Type.String({
  pattern: '^[^\\s@\\u0000-\\u001F\\u007F]+@[^\\s@\\u0000-\\u001F\\u007F]+\\.[^\\s@\\u0000-\\u001F\\u007F]+$',
  maxLength: 254,
  description:
    'an e-mail address such as ada@example.com (at most 254 characters), unique regardless of case',
});

const DisplayName = Type.String({
  pattern: '^(?=.*\\S)[^\\u0000-\\u001F\\u007F-\\u009F]*$',
  maxLength: 200,
  description: 'a name to show: 1 to 200 characters, not blank, without control characters',
});

const Password = (what: string) =>
  Type.String({
    description:
      `${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters, not a common password nor built from ` +
      `the user’s e-mail or name (a refused one is a 422 that says why), stored as an argon2id hash and never returned. ${what}`,
  });

// ---- users

/** The same `User` as the bootstrap answer's, one component in the OpenAPI document. */
export { User } from './auth.js';

export const UserCreateBody = Type.Object(
  {
    email: Email,
    display_name: DisplayName,
    password: Type.Optional(Password('Absent: the user signs in only through SSO.')),
  },
  { additionalProperties: false },
);

export const UserUpdateBody = Type.Object(
  {
    display_name: Type.Optional(DisplayName),
    disabled: Type.Optional(
      Type.Boolean({
        description:
          'true ends the user’s sessions and stops its tokens; refused (409 LAST_ADMIN) for the last enabled organization admin',
      }),
    ),
    password: Type.Optional(Password('Setting it ends the user’s sessions.')),
  },
  { additionalProperties: false, minProperties: 1 },
);

// ---- workspaces

export const Workspace = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    project_count: Type.Integer({ description: 'how many projects the workspace holds' }),
    created_at: Timestamp,
  },
  { $id: 'Workspace' },
);

export const WorkspaceBody = Type.Object({ name: Name }, { additionalProperties: false });

// ---- projects

export const Project = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    workspace_id: Type.String(),
    workspace: Type.String({ description: 'the name of the workspace that holds the project' }),
    created_at: Timestamp,
  },
  { $id: 'Project' },
);

/** A workspace a body names: it is looked up (unknown: 422). */
const WorkspaceReference = (what: string) =>
  Type.String({ minLength: 1, description: `the name of an existing workspace (unknown: 422); ${what}` });

export const ProjectCreateBody = Type.Object(
  {
    name: Name,
    workspace: Type.Optional(WorkspaceReference('absent: the default workspace')),
  },
  { additionalProperties: false },
);

export const ProjectUpdateBody = Type.Object(
  {
    name: Type.Optional(Name),
    workspace: Type.Optional(WorkspaceReference('the project moves there')),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const ProjectsQuery = Type.Object(
  { workspace: Type.Optional(WorkspaceReference('only the projects it holds are listed')) },
  { additionalProperties: false },
);

// ---- roles and role bindings

const RoleName = Type.Union(
  ROLES.map((role) => Type.Literal(role)),
  { description: `a role: ${ROLES.join(', ')} (each may do what the one before it may)` },
);

const ScopeTypeName = Type.Union(
  SCOPE_TYPES.map((scope) => Type.Literal(scope)),
  {
    description:
      'where the role applies: the whole organization, every project of a workspace, or one project',
  },
);

export const RoleInfo = Type.Object({
  name: Type.String(),
  rank: Type.Integer({ description: '1 for the weakest; a role may do everything a lower rank may' }),
  description: Type.String(),
  permissions: Type.Array(Type.String(), {
    description: 'the route permissions it grants in every project of its scope: read, operate, edit, manage',
  }),
  manages_organization: Type.Boolean({
    description:
      'bound at organization scope, it also grants the organization permission: users, workspaces, projects, role bindings, SSO and the audit trail',
  }),
});

export const RoleBinding = Type.Object(
  {
    id: Type.String(),
    user_id: Type.String(),
    user_email: Type.String(),
    role: Type.String(),
    scope_type: Type.String(),
    scope_id: Type.String(),
    scope_name: Type.Union([Type.String(), Type.Null()], {
      description: 'the name of the organization, workspace or project; null if it no longer exists',
    }),
    source: Type.String({
      description: '`manual`, or `sso:<provider>` for a binding an SSO login maps from groups',
    }),
    created_at: Timestamp,
  },
  { $id: 'RoleBinding' },
);

export const RoleBindingCreateBody = Type.Object(
  {
    user_id: IdReference('the user'),
    role: RoleName,
    scope_type: ScopeTypeName,
    scope_id: Type.Optional(
      IdReference(
        'the workspace or project; for the organization scope omit it (or give the organization’s id)',
      ),
    ),
    scope: Type.Optional(
      Type.String({ minLength: 1, description: 'the name of the workspace or project, instead of scope_id' }),
    ),
  },
  { additionalProperties: false },
);

export const RoleBindingsQuery = Type.Object(
  {
    user_id: Type.Optional(IdReference('a user: only its bindings')),
    scope_type: Type.Optional(ScopeTypeName),
    scope_id: Type.Optional(IdReference('an organization, workspace or project: only the bindings at it')),
  },
  { additionalProperties: false },
);

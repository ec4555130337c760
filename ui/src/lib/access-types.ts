/**
 * The API's users, roles, role bindings and tokens as the Access page reads them (User, RoleInfo,
 * RoleBinding, Token and CreatedToken in src/http/schemas/auth.ts and tenancy.ts).
 */

/** GET /v1/users. */
export interface User {
  id: string;
  email: string;
  display_name: string;
  disabled: boolean;
  password_set: boolean;
  created_at: string;
  updated_at: string;
}

/** GET /v1/roles, weakest first. */
export interface RoleInfo {
  name: string;
  rank: number;
  description: string;
  permissions: string[];
  manages_organization: boolean;
}

/** GET /v1/role-bindings. */
export interface RoleBinding {
  id: string;
  user_id: string;
  user_email: string;
  role: string;
  scope_type: string;
  scope_id: string;
  scope_name: string | null;
  source: string;
  created_at: string;
}

/** GET /v1/projects/:id. */
export interface Project {
  id: string;
  name: string;
  workspace_id: string;
  workspace: string;
  created_at: string;
}

/** GET /v1/tokens: never the secret. */
export interface Token {
  id: string;
  name: string;
  user_id: string;
  project_id: string;
  role: string | null;
  prefix: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** POST /v1/tokens: the one answer that carries the secret. */
export interface CreatedToken extends Token {
  token: string;
}

-- Authentication and tenancy: users, role bindings, API tokens, sessions, SSO providers and the
-- audit trail. An organization holds workspaces; a workspace holds projects. A role bound at a
-- scope applies to everything inside it.
CREATE TABLE workspaces (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name)
);

INSERT INTO workspaces (id, organization_id, name)
  VALUES ('00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000001', 'default');

ALTER TABLE projects ADD COLUMN workspace_id uuid REFERENCES workspaces (id);
UPDATE projects SET workspace_id = '00000000-0000-4000-8000-000000000003';
ALTER TABLE projects ALTER COLUMN workspace_id SET NOT NULL;
CREATE INDEX projects_workspace_idx ON projects (workspace_id);

CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id),
  email text NOT NULL,
  display_name text NOT NULL,
  -- argon2id PHC string; null for users who only sign in through SSO.
  password_hash text,
  disabled boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_idx ON users (organization_id, lower(email));

-- An SSO identity: a user is matched by the provider's issuer and the subject it names.
CREATE TABLE user_identities (
  issuer text NOT NULL,
  subject text NOT NULL,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (issuer, subject)
);

CREATE TABLE roles (
  name text PRIMARY KEY,
  rank integer NOT NULL UNIQUE,
  description text NOT NULL
);
INSERT INTO roles (name, rank, description) VALUES
  ('viewer', 1, 'reads pipelines, connections, status and metrics'),
  ('operator', 2, 'viewer, and starts, stops, pauses, resumes and backfills pipelines'),
  ('editor', 3, 'operator, and creates, updates and deletes pipelines and connections, and decides schema changes'),
  ('admin', 4, 'editor, and manages tokens; at organization scope also users, workspaces, projects, role bindings, SSO and the audit trail');

CREATE TABLE role_bindings (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role text NOT NULL REFERENCES roles (name),
  scope_type text NOT NULL CHECK (scope_type IN ('organization', 'workspace', 'project')),
  scope_id uuid NOT NULL,
  -- `manual`, or `sso:<provider>` for bindings an SSO login maps from the provider's groups.
  source text NOT NULL DEFAULT 'manual',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (user_id, role, scope_type, scope_id)
);
CREATE INDEX role_bindings_user_idx ON role_bindings (user_id);

-- Token and session secrets are never stored: only an HMAC of them under a key derived from the
-- master key, so instances sharing the database and the key recognise each other's.
CREATE TABLE api_tokens (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name text NOT NULL,
  -- A role that narrows what the token may do below its user's role; null: the user's role.
  role text REFERENCES roles (name),
  secret_hash text NOT NULL UNIQUE,
  -- The first characters of the secret, to tell tokens apart in a listing.
  prefix text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id);

CREATE TABLE sessions (
  id_hash text PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  -- The active project of the session, switched with PUT /v1/auth/session.
  project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  absolute_expires_at timestamptz NOT NULL,
  source_address text,
  user_agent text
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_expiry_idx ON sessions (expires_at);

CREATE TABLE sso_providers (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id),
  name text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('oidc', 'saml')),
  -- Settings in clear (issuer, client id, entry point, certificates, role mapping) ...
  settings jsonb NOT NULL,
  -- ... and secrets (OIDC client secret, SAML private key) sealed with the master key.
  secrets_sealed text,
  enabled boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name)
);

-- An SSO login under way (OIDC state and PKCE verifier, SAML request id), kept in the database so
-- that the callback may reach any instance.
CREATE TABLE sso_login_flows (
  state_hash text PRIMARY KEY,
  provider_id uuid NOT NULL REFERENCES sso_providers (id) ON DELETE CASCADE,
  data_sealed text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);

CREATE TABLE audit_events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  -- `system` (authentication off), `user` or `token`; the id and a readable name beside it.
  actor_type text NOT NULL CHECK (actor_type IN ('system', 'user', 'token', 'anonymous')),
  actor_id text,
  actor_name text NOT NULL,
  action text NOT NULL,
  target text,
  project_id uuid,
  source_address text,
  outcome text NOT NULL CHECK (outcome IN ('success', 'denied', 'failure')),
  status integer,
  request_id text,
  details jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_events_at_idx ON audit_events (at DESC, id DESC);
CREATE INDEX audit_events_project_idx ON audit_events (project_id, id DESC);

-- The audit trail is append-only: no update, delete or truncate, whoever asks.
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit events are append-only' USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();

-- Tenancy: one organization and one project are seeded; every record below belongs to a project.
CREATE TABLE organizations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name)
);

INSERT INTO organizations (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'default');
INSERT INTO projects (id, organization_id, name)
  VALUES ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001', 'default');

CREATE TABLE connections (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id uuid NOT NULL REFERENCES projects (id),
  name text NOT NULL,
  type text NOT NULL,
  -- The DSN with its password removed; the password is sealed with the master key beside it.
  dsn text NOT NULL,
  password_sealed text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name)
);

CREATE TABLE pipelines (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id uuid NOT NULL REFERENCES projects (id),
  name text NOT NULL,
  -- Connections are referenced by name, as in the API; a forced connection delete leaves the name dangling
  -- and the pipeline refuses to start until it names an existing connection again.
  source_connection text NOT NULL,
  source_tables text[] NOT NULL,
  sink_connection text NOT NULL,
  sink_properties jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Bumped on every definition change so a running pipeline can tell it must reload.
  generation integer NOT NULL DEFAULT 1,
  -- What the user asked for, and what the pipeline is doing now.
  desired_state text NOT NULL DEFAULT 'stopped' CHECK (desired_state IN ('stopped', 'running', 'paused')),
  state text NOT NULL DEFAULT 'stopped',
  state_reason text,
  error text,
  last_checkpoint_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name)
);

CREATE INDEX pipelines_source_connection_idx ON pipelines (project_id, source_connection);
CREATE INDEX pipelines_sink_connection_idx ON pipelines (project_id, sink_connection);

CREATE TABLE pipeline_runs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id uuid NOT NULL REFERENCES projects (id),
  pipeline_id uuid NOT NULL REFERENCES pipelines (id) ON DELETE CASCADE,
  started_at timestamptz NOT NULL DEFAULT now(),
  ended_at timestamptz,
  events_total bigint NOT NULL DEFAULT 0,
  outcome text,
  error text
);

CREATE INDEX pipeline_runs_pipeline_idx ON pipeline_runs (pipeline_id, started_at DESC);

CREATE TABLE workers (
  id uuid PRIMARY KEY,
  hostname text NOT NULL,
  pid integer NOT NULL,
  version text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  stopped_at timestamptz
);

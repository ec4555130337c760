import { randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { expect } from 'vitest';
import { hashPassword, passwordProblem } from '../../src/auth/password.js';
import type { Role, ScopeType } from '../../src/auth/roles.js';
import { DEFAULT_ORGANIZATION_ID, DEFAULT_PROJECT_ID, DEFAULT_WORKSPACE_ID } from '../../src/store/pool.js';
import { ApiCaller } from './auth-client.js';

export { DEFAULT_ORGANIZATION_ID, DEFAULT_PROJECT_ID, DEFAULT_WORKSPACE_ID };

/**
 * The password of every fixture user. Hashing costs 50-100 ms (argon2id, 46 MiB), so it is hashed
 * once per test process and the hash is shared by all fixture users.
 */
export const FIXTURE_PASSWORD = 'violet kettle drums over 47 quiet harbours';

let sharedHash: Promise<string> | undefined;
function fixtureHash(): Promise<string> {
  sharedHash ??= passwordProblem(FIXTURE_PASSWORD).then((problem) => {
    if (problem) throw new Error(`FIXTURE_PASSWORD would be refused by the service: ${problem}`);
    return hashPassword(FIXTURE_PASSWORD);
  });
  return sharedHash;
}

export interface Scope {
  type: ScopeType;
  id: string;
}

export const organizationScope: Scope = { type: 'organization', id: DEFAULT_ORGANIZATION_ID };
export const workspaceScope = (id: string): Scope => ({ type: 'workspace', id });
export const projectScope = (id: string): Scope => ({ type: 'project', id });

export interface FixtureUser {
  id: string;
  email: string;
}

/**
 * Users, workspaces, projects and role bindings written straight into the metadata store, so the
 * authentication tests depend on nothing but the schema (not on the management API). The service
 * must have started once on the store first: it runs the migrations.
 */
export class AuthFixtures {
  private constructor(readonly db: pg.Client) {}

  static async open(storeUrl: string): Promise<AuthFixtures> {
    const db = new pg.Client({ connectionString: storeUrl });
    await db.connect();
    return new AuthFixtures(db);
  }

  close(): Promise<void> {
    return this.db.end();
  }

  query<R extends pg.QueryResultRow = any>(text: string, params: unknown[] = []) {
    return this.db.query<R>(text, params);
  }

  /** A user of the default organization who signs in with FIXTURE_PASSWORD. */
  async user(email: string, options: { disabled?: boolean } = {}): Promise<FixtureUser> {
    const { rows } = await this.db.query<{ id: string }>(
      `INSERT INTO users (organization_id, email, display_name, password_hash, disabled)
       VALUES ($1, $2, $3, $4, $5) RETURNING id`,
      [DEFAULT_ORGANIZATION_ID, email, email.split('@')[0], await fixtureHash(), options.disabled ?? false],
    );
    return { id: (rows[0] as { id: string }).id, email };
  }

  async workspace(name: string): Promise<string> {
    const { rows } = await this.db.query<{ id: string }>(
      'INSERT INTO workspaces (organization_id, name) VALUES ($1, $2) RETURNING id',
      [DEFAULT_ORGANIZATION_ID, name],
    );
    return (rows[0] as { id: string }).id;
  }

  async project(name: string, workspaceId = DEFAULT_WORKSPACE_ID): Promise<string> {
    const { rows } = await this.db.query<{ id: string }>(
      'INSERT INTO projects (organization_id, workspace_id, name) VALUES ($1, $2, $3) RETURNING id',
      [DEFAULT_ORGANIZATION_ID, workspaceId, name],
    );
    return (rows[0] as { id: string }).id;
  }

  async bind(user: FixtureUser, role: Role, scope: Scope): Promise<void> {
    await this.db.query(
      'INSERT INTO role_bindings (user_id, role, scope_type, scope_id) VALUES ($1, $2, $3, $4)',
      [user.id, role, scope.type, scope.id],
    );
  }

  /** A user holding one role at one scope. */
  async userWith(email: string, role: Role, scope: Scope): Promise<FixtureUser> {
    const user = await this.user(email);
    await this.bind(user, role, scope);
    return user;
  }

  /** The stored session rows of a user (a fixture user signs in from one browser at a time). */
  async sessionsOf(user: FixtureUser) {
    const { rows } = await this.db.query<{
      id_hash: string;
      project_id: string;
      last_seen_at: Date;
      expires_at: Date;
      absolute_expires_at: Date;
    }>(
      'SELECT id_hash, project_id, last_seen_at, expires_at, absolute_expires_at FROM sessions WHERE user_id = $1',
      [user.id],
    );
    return rows;
  }
}

/**
 * A browser-like caller signed in as a fixture user (optionally naming the project to start in).
 * Each sign-in counts against the service's limit of sign-in attempts per address and minute.
 */
export async function signIn(base: string, user: FixtureUser, project?: string): Promise<ApiCaller> {
  const caller = new ApiCaller(base);
  const res = await caller.login(user.email, FIXTURE_PASSWORD, project);
  expect(res.status, `sign-in of ${user.email}: ${res.text}`).toBe(200);
  return caller;
}

/** A fresh secret of 64 hex characters in a 0600 file (a master key or a metrics token). */
export function writeSecretFile(path: string): string {
  const secret = randomBytes(32).toString('hex');
  writeFileSync(path, secret, { mode: 0o600 });
  chmodSync(path, 0o600);
  return secret;
}

/** A connection body whose server is never reached (nothing listens on port 1). */
export const unreachableConnection = (name: string) => ({
  name,
  type: 'postgres',
  dsn: `postgres://u:p@127.0.0.1:1/${name}`,
});

/** A pipeline body from `src` to `dst`, into a schema of its own: two pipelines may not write one table. */
export const pipelineBody = (name: string, tables = ['public.orders']) => ({
  name,
  source: { connection: 'src', tables },
  sink: { connection: 'dst', properties: { target_schema: name.replace(/[^A-Za-z0-9_]/g, '_') } },
});

import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const ConnectionRow = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  type: z.string(),
  dsn: z.string(),
  password_sealed: z.string().nullable(),
  secrets_sealed: z.string().nullable(),
  secret_names: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConnectionRow = z.infer<typeof ConnectionRow>;

const COLUMNS = sql.fragment`id, project_id, name, type, dsn, password_sealed, secrets_sealed, secret_names,
  created_at, updated_at`;

/** The fields written for a connection; the secrets arrive already sealed. */
export interface ConnectionWrite {
  type: string;
  dsn: string;
  passwordSealed: string | null;
  /** The other secrets (sslpassword, TLS material) as one sealed JSON document. */
  secretsSealed: string | null;
  /** Which of those other secrets are set, e.g. `sslpassword`, `tls.ca_cert`. */
  secretNames: string[];
}

export const connectionsStore = {
  list: (db: CommonQueryMethods, projectId: string) =>
    db.any(
      sql.type(
        ConnectionRow,
      )`SELECT ${COLUMNS} FROM connections WHERE project_id = ${projectId} ORDER BY name`,
    ),

  /** Every project's connections (project filtering off), by name then project. */
  listAll: (db: CommonQueryMethods) =>
    db.any(sql.type(ConnectionRow)`SELECT ${COLUMNS} FROM connections ORDER BY name, project_id`),

  /** Finds a connection; with `lock`, holds a row lock until the transaction ends. */
  find: (db: CommonQueryMethods, projectId: string, name: string, lock?: 'share' | 'update') =>
    db.maybeOne(sql.type(ConnectionRow)`SELECT ${COLUMNS} FROM connections
      WHERE project_id = ${projectId} AND name = ${name}
      ${lock === 'update' ? sql.fragment`FOR UPDATE` : lock === 'share' ? sql.fragment`FOR SHARE` : sql.fragment``}`),

  insert: (db: CommonQueryMethods, projectId: string, name: string, w: ConnectionWrite) =>
    db.one(sql.type(
      ConnectionRow,
    )`INSERT INTO connections (project_id, name, type, dsn, password_sealed, secrets_sealed, secret_names)
      VALUES (${projectId}, ${name}, ${w.type}, ${w.dsn}, ${w.passwordSealed}, ${w.secretsSealed},
        ${sql.array(w.secretNames, 'text')}) RETURNING ${COLUMNS}`),

  update: (db: CommonQueryMethods, projectId: string, name: string, w: ConnectionWrite) =>
    db.maybeOne(sql.type(ConnectionRow)`UPDATE connections
      SET type = ${w.type}, dsn = ${w.dsn}, password_sealed = ${w.passwordSealed},
        secrets_sealed = ${w.secretsSealed}, secret_names = ${sql.array(w.secretNames, 'text')}, updated_at = now()
      WHERE project_id = ${projectId} AND name = ${name} RETURNING ${COLUMNS}`),

  delete: (db: CommonQueryMethods, projectId: string, name: string) =>
    db.query(sql.unsafe`DELETE FROM connections WHERE project_id = ${projectId} AND name = ${name}`),
};

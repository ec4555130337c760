import { Type } from 'typebox';
import { connectionTypeNames } from '../../sinks/registry.js';
import { Name, NameParams, Timestamp } from './common.js';

const ConnectionTypeName = Type.String({
  description: `Connection type: ${connectionTypeNames().join(', ')} (see docs/sinks/index.md for each one's DSN)`,
});

const Dsn = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: 'Connection URL, e.g. postgres://user:password@host:5432/db?sslmode=require',
});

const Pem = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: 512 * 1024,
    description: `${what} as PEM text; **** on update keeps the stored one`,
  });

const Tls = Type.Object(
  {
    ca_cert: Type.Optional(Pem('CA certificate(s) the server certificate must chain to')),
    client_cert: Type.Optional(Pem('Client certificate')),
    client_key: Type.Optional(
      Pem("The client certificate's private key (encrypted keys take sslpassword in the DSN)"),
    ),
  },
  {
    additionalProperties: false,
    description:
      'TLS material for sslmode=require, verify-ca or verify-full. Stored encrypted and never returned: responses show **** for what is set',
  },
);

export const ConnectionCreateBody = Type.Object(
  {
    name: Name,
    type: ConnectionTypeName,
    dsn: Dsn,
    tls: Type.Optional(Tls),
  },
  { additionalProperties: false },
);

export const ConnectionReplaceBody = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'If given, must equal the name in the path' })),
    type: ConnectionTypeName,
    dsn: Type.String({
      minLength: 1,
      maxLength: 4096,
      description:
        'New DSN; a password (or sslpassword) of **** keeps the stored one while host, port, database and user are unchanged',
    }),
    tls: Type.Optional(Tls),
  },
  { additionalProperties: false },
);

export const Connection = Type.Object(
  {
    id: Type.String(),
    project_id: Type.String(),
    name: Type.String(),
    type: Type.String(),
    dsn: Type.String({ description: 'The DSN with its password and sslpassword shown as ****' }),
    tls: Type.Object(
      {
        ca_cert: Type.Optional(Type.Literal('****')),
        client_cert: Type.Optional(Type.Literal('****')),
        client_key: Type.Optional(Type.Literal('****')),
      },
      { description: 'Which TLS material is set, each shown as ****' },
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
    orphaned_slots: Type.Array(
      Type.Object({
        slot: Type.String({ description: 'The replication slot left on this source' }),
        pipeline: Type.String({ description: 'The deleted pipeline that owned it' }),
        reason: Type.String({ description: 'Why it could not be dropped' }),
        drop_statement: Type.String({ description: 'The statement that drops it by hand on the source' }),
        since: Timestamp,
      }),
      {
        description:
          'Replication slots that forced pipeline deletes could not drop on this source: each holds its WAL ' +
          'until dropped (DELETE /v1/connections/{name}/orphaned-slots/{slot}, or by hand)',
      },
    ),
    used_by: Type.Array(
      Type.Object({
        pipeline: Type.String({ description: 'The pipeline that names this connection' }),
        state: Type.String({ description: "The pipeline's state" }),
        as: Type.Union([Type.Literal('source'), Type.Literal('sink')], {
          description:
            'Whether it names it as its source or its sink (a pipeline naming it as both is listed twice)',
        }),
      }),
      { description: 'The pipelines that use this connection, by name' },
    ),
  },
  { $id: 'Connection' },
);

export const OrphanedSlotParams = Type.Object({
  name: NameParams.properties.name,
  slot: Type.String({ description: 'The orphaned replication slot, as orphaned_slots lists it' }),
});

export const ForceQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description: 'true deletes even when pipelines use the connection',
      }),
    ),
  },
  { additionalProperties: false },
);

/** A table of a source connection, as offered for a pipeline. */
export const SourceTableView = Type.Object(
  {
    table: Type.String({ description: 'schema.table' }),
    replicable: Type.Boolean(),
    reason: Type.Union([Type.String(), Type.Null()], {
      description: 'why it cannot be replicated and what to do; null when it can',
    }),
    estimated_rows: Type.Integer({ description: "the source's row estimate, 0 when it has none" }),
  },
  { $id: 'SourceTable' },
);

/**
 * The connection a test reaches: a create body whose name is optional. Given the name of a stored
 * connection, a secret of **** stands for the stored one (as on replace).
 */
const TestedAs = Type.Union([Type.Literal('source'), Type.Literal('sink')], {
  description:
    'Which side of a pipeline a postgres connection is judged as: a source (the default) must allow logical replication (wal_level, slots, WAL senders, the replication right); a sink need only be reached and logged in to. Other types are sinks only',
});

export const ConnectionTestBody = Type.Object(
  {
    name: Type.Optional(Name),
    type: ConnectionTypeName,
    dsn: Dsn,
    tls: Type.Optional(Tls),
    as: Type.Optional(TestedAs),
  },
  { additionalProperties: false },
);

export const ConnectionTestQuery = Type.Object(
  { as: Type.Optional(TestedAs) },
  { additionalProperties: false },
);

/** What testing a connection found. */
export const ConnectionTestResult = Type.Object(
  {
    ok: Type.Boolean({ description: 'true when every check is met: the connection is usable' }),
    as: Type.Union([Type.Literal('source'), Type.Literal('sink')], {
      description: 'The side of a pipeline the connection was judged as',
    }),
    checks: Type.Array(
      Type.Object({
        name: Type.String({
          description:
            'What was checked: reach, server_version, wal_level, replication_slots, wal_senders, ' +
            'replication_role, database_connect (postgres), jetstream (nats)',
        }),
        ok: Type.Boolean(),
        message: Type.String({ description: 'What was found, in words; never holds a password' }),
      }),
    ),
  },
  { $id: 'ConnectionTestResult' },
);

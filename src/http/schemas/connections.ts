import { Type } from 'typebox';
import { Name, Timestamp } from './common.js';

const Dsn = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: 'Connection URL, e.g. postgres://user:password@host:5432/db?sslmode=require',
});

export const ConnectionCreateBody = Type.Object(
  { name: Name, type: Type.String({ description: 'Connection type: postgres' }), dsn: Dsn },
  { additionalProperties: false },
);

export const ConnectionReplaceBody = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'If given, must equal the name in the path' })),
    type: Type.String({ description: 'Connection type: postgres' }),
    dsn: Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'New DSN; a password of **** keeps the stored password',
    }),
  },
  { additionalProperties: false },
);

export const Connection = Type.Object({
  id: Type.String(),
  project_id: Type.String(),
  name: Type.String(),
  type: Type.String(),
  dsn: Type.String({ description: 'The DSN with its password shown as ****' }),
  created_at: Timestamp,
  updated_at: Timestamp,
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

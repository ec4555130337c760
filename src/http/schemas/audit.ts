import { Type } from 'typebox';
import { Timestamp, UUID_PATTERN } from './common.js';

export const AuditQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({
        pattern: '^[0-9]{1,3}$',
        description: 'a whole number of events per page, 1 to 500 (default 100)',
      }),
    ),
    cursor: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,18}$', description: 'the next_cursor of a previous page' }),
    ),
    action: Type.Optional(Type.String({ maxLength: 100, description: 'e.g. pipeline.create, auth.login' })),
    actor_id: Type.Optional(Type.String({ pattern: UUID_PATTERN, description: 'a user id' })),
    project_id: Type.Optional(Type.String({ pattern: UUID_PATTERN })),
    outcome: Type.Optional(
      Type.Union([Type.Literal('success'), Type.Literal('denied'), Type.Literal('failure')]),
    ),
  },
  { additionalProperties: false },
);

export const AuditPage = Type.Object({
  events: Type.Array(
    Type.Object({
      id: Type.Integer(),
      at: Timestamp,
      actor: Type.Object({
        type: Type.String({ description: 'system, user, token or anonymous' }),
        id: Type.Union([Type.String(), Type.Null()], { description: "the user's id (a token's user)" }),
        name: Type.String({ description: 'system, the e-mail, or "<e-mail> token <name>"' }),
      }),
      action: Type.String(),
      target: Type.Union([Type.String(), Type.Null()], { description: 'e.g. pipeline:orders' }),
      project_id: Type.Union([Type.String(), Type.Null()]),
      source_address: Type.Union([Type.String(), Type.Null()]),
      outcome: Type.String({ description: 'success, denied (401/403) or failure' }),
      status: Type.Union([Type.Integer(), Type.Null()], { description: 'the HTTP status answered' }),
      request_id: Type.Union([Type.String(), Type.Null()], {
        description: "the service's id of the request, as answered in x-request-id",
      }),
      client_request_id: Type.Union([Type.String(), Type.Null()], {
        description: "the caller's own x-request-id, kept when at most 64 characters of A-Z a-z 0-9 . _ : -",
      }),
      details: Type.Record(Type.String(), Type.Unknown()),
    }),
  ),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});

import { Type } from 'typebox';
import { NAME_MAX_LENGTH, NAME_PATTERN, NAME_RULE } from '../../naming.js';

/** The error body of every failed request. */
export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'Human-readable message' }),
    code: Type.String({ description: 'Machine-readable code, see the README' }),
  },
  { description: 'Error' },
);

export const Name = Type.String({
  pattern: NAME_PATTERN,
  minLength: 1,
  maxLength: NAME_MAX_LENGTH,
  description: NAME_RULE,
});

export const NameParams = Type.Object({ name: Type.String({ description: 'Pipeline or connection name' }) });

export const Timestamp = Type.String({ description: 'ISO 8601 UTC timestamp' });

/** Error responses that every route may give, for the OpenAPI document. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, ErrorBody]));

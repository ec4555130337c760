import { type Static, type TSchema, Type } from 'typebox';
import { NAME_MAX_LENGTH, NAME_PATTERN, NAME_RULE } from '../../naming.js';

/** The error body of every failed request. */
export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'Human-readable message' }),
    code: Type.String({ description: 'Machine-readable code, see docs/api/errors.md' }),
    details: Type.Optional(
      Type.Object(
        {
          problems: Type.Optional(
            Type.Array(Type.Object({ path: Type.String(), message: Type.String() }), {
              description:
                'VALIDATION_FAILED of POST /v1/apply: every problem of the document, each at its path',
            }),
          ),
          pipelines: Type.Optional(
            Type.Array(Type.String(), {
              description: 'PRUNE_REFUSED, CONNECTION_IN_USE: the pipelines that stand in the way',
            }),
          ),
          verifications: Type.Optional(
            Type.Array(Type.String(), {
              description: 'VERIFICATION_RUNNING: the id of the verification queued or running',
            }),
          ),
        },
        { description: 'What a program needs to act on some errors, besides the message' },
      ),
    ),
  },
  { $id: 'ErrorBody', description: 'Error' },
);

/**
 * The authentication guard's 401, exactly as the specification writes it: no `code`. It is sent
 * already serialized, so this schema only documents it.
 */
export const Unauthenticated = Type.Object(
  { error: Type.Literal('unauthenticated') },
  { $id: 'Unauthenticated', description: 'No valid session or token (with WWW-Authenticate: Bearer)' },
);

export const Name = Type.String({
  pattern: NAME_PATTERN,
  minLength: 1,
  maxLength: NAME_MAX_LENGTH,
  description: NAME_RULE,
});

/** What no name can hold: control characters (PostgreSQL text cannot even hold NUL). */
export const NO_CONTROL_CHARACTERS = '^[^\\u0000-\\u001F\\u007F-\\u009F]*$';

/** A connection named in a body: it is looked up (unknown: 422); only what no name holds is refused. */
export const ConnectionReference = Type.String({
  pattern: NO_CONTROL_CHARACTERS,
  description: 'the name of an existing connection, without control characters',
});

/**
 * A name in a path. Only what can never be in a name is refused here (with 400): control
 * characters, which the store cannot even look up (NUL). Any other name that names nothing,
 * valid or not, is a 404 from the lookup.
 */
export const NameParams = Type.Object({
  name: Type.String({
    pattern: NO_CONTROL_CHARACTERS,
    description: 'a pipeline or connection name, without control characters',
  }),
});

/** A record id in a query or body: a UUID, any case. */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

export const Timestamp = Type.String({ description: 'ISO 8601 UTC timestamp' });

/**
 * A reference to a named schema (one with an `$id`, added with `addComponentSchemas`), typed as the
 * schema itself: Fastify resolves it for validation and serialization, and the OpenAPI document shows
 * it as a `$ref` to `components.schemas`, so client generators name the type.
 */
export function ref<T extends TSchema>(schema: T) {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('ref() takes a schema with an $id');
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` });
}

/** Error responses that every route may give, for the OpenAPI document. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, ref(ErrorBody)]));

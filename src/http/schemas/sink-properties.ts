import { type TSchema, Type } from 'typebox';
import { findSinkKind, sinkTypes } from '../../sinks/registry.js';

// A documented key with a placeholder (`table.<schema>.<table>`) is a family of keys: its fixed
// prefix becomes a pattern.
const PLACEHOLDER = /<[^>]+>/;
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const schemaName = (type: string) =>
  `${type
    .split(/[^a-z0-9]+/i)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('')}SinkProperties`;

/**
 * One named schema per sink type, from the same documentation as the tables of docs/sinks/: the keys
 * `sink.properties` may hold when the sink connection is of that type. The pipeline body names the
 * connection, not the type, so the route itself takes a string map and each sink validates its
 * own keys; these are the reference of those keys for people and client generators.
 */
export const SINK_PROPERTIES_SCHEMAS: readonly (TSchema & { $id: string })[] = sinkTypes().map((type) => {
  const docs = findSinkKind(type)?.properties ?? [];
  const fixed = docs.filter((d) => !PLACEHOLDER.test(d.key));
  const families = docs.filter((d) => PLACEHOLDER.test(d.key));
  const meaning = (d: (typeof docs)[number]) => `${d.description} Default: ${d.default.replaceAll('`', '')}.`;
  const property = (d: (typeof docs)[number]) => Type.String({ description: meaning(d) });
  return Type.Object(Object.fromEntries(fixed.map((d) => [d.key, Type.Optional(property(d))])), {
    $id: schemaName(type),
    description: `sink.properties of a pipeline whose sink connection is of type ${type}`,
    additionalProperties: false,
    ...(families.length > 0 && {
      patternProperties: Object.fromEntries(
        families.map((d) => [
          `^${escapeRegExp(d.key.split(PLACEHOLDER)[0] as string)}`,
          // The OpenAPI document shows a pattern's schema as additionalProperties: the key's form goes in words.
          Type.String({ description: `Keys ${d.key}: ${meaning(d)}` }),
        ]),
      ),
    }),
  }) as unknown as TSchema & { $id: string };
});

/** The name of the schema listing a sink type's properties. */
export const sinkPropertiesSchemaName = schemaName;

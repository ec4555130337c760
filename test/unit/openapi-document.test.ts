import { beforeAll, describe, expect, it } from 'vitest';
import { openapiDocument } from '../../scripts/openapi-document.js';
import { sinkPropertiesSchemaName } from '../../src/http/schemas/sink-properties.js';
import { findSinkKind, sinkTypes } from '../../src/sinks/registry.js';

type Operation = {
  operationId?: string;
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
};
type Document = {
  servers?: { url: string }[];
  security?: unknown[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

describe('the OpenAPI document, for client generators', () => {
  let doc: Document;
  let operations: { method: string; path: string; operation: Operation }[];
  beforeAll(async () => {
    doc = (await openapiDocument()) as unknown as Document;
    operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => METHODS.has(method))
        .map(([method, operation]) => ({ method, path, operation })),
    );
  });

  const schemaOf = (method: string, path: string, status: string) =>
    doc.paths[path]?.[method]?.responses[status]?.content?.['application/json']?.schema;

  it('names every operation once, in camelCase', () => {
    expect(operations.length).toBeGreaterThan(60);
    const ids = operations.map(({ method, path, operation }) => {
      expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]*$/);
      return operation.operationId;
    });
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining(['listPipelines', 'createPipeline', 'getPipeline', 'login', 'createToken']),
    );
  });

  it('has a server and a security requirement for every operation', () => {
    expect(doc.servers?.length).toBeGreaterThan(0);
    expect(doc.security?.length).toBeGreaterThan(0);
    // The public sign-in routes opt out with an empty list; the others inherit the global one.
    expect(doc.paths['/v1/auth/login']?.post?.security).toEqual([]);
    expect(doc.paths['/v1/pipelines']?.get?.security).toBeUndefined();
  });

  it('answers with the main resources as $refs to components.schemas', () => {
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    expect(schemaOf('get', '/v1/pipelines', '200')).toEqual({ type: 'array', items: ref('PipelineSummary') });
    expect(schemaOf('get', '/v1/pipelines/{name}', '200')).toEqual(ref('Pipeline'));
    expect(schemaOf('get', '/v1/pipelines/{name}', '404')).toEqual(ref('ErrorBody'));
    expect(schemaOf('get', '/v1/connections/{name}', '200')).toEqual(ref('Connection'));
    expect(schemaOf('post', '/v1/tokens', '201')).toEqual(ref('CreatedToken'));
    expect(schemaOf('get', '/v1/tokens', '200')).toEqual({ type: 'array', items: ref('Token') });
    expect(schemaOf('get', '/v1/users/{id}', '200')).toEqual(ref('User'));
    expect(schemaOf('get', '/v1/auth/session', '200')).toEqual(ref('SessionInfo'));
    for (const name of ['Pipeline', 'PipelineSummary', 'Connection', 'ErrorBody', 'Token', 'User']) {
      expect(doc.components.schemas[name], name).toMatchObject({ type: 'object' });
    }
    // Every $ref points at a schema the document holds.
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)];
    for (const [, name] of refs) expect(doc.components.schemas, name).toHaveProperty([name as string]);
  });

  it("lists each sink type's properties, with their meaning and default", () => {
    for (const type of sinkTypes()) {
      const name = sinkPropertiesSchemaName(type);
      const schema = doc.components.schemas[name] as {
        properties: Record<string, { description: string }>;
        additionalProperties: false | { description: string };
      };
      expect(schema, name).toBeDefined();
      const docs = findSinkKind(type)?.properties ?? [];
      const fixed = docs.filter((d) => !d.key.includes('<'));
      expect(Object.keys(schema.properties), name).toEqual(fixed.map((d) => d.key));
      for (const d of fixed) expect(schema.properties[d.key]?.description).toContain(d.description);
      const family = docs.find((d) => d.key.includes('<'));
      if (family)
        expect(schema.additionalProperties).toMatchObject({
          description: expect.stringContaining(family.key),
        });
      else expect(schema.additionalProperties, name).toBe(false);
    }
    expect(sinkPropertiesSchemaName('postgres')).toBe('PostgresSinkProperties');
  });
});

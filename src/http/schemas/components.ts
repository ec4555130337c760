import type { FastifyInstance } from 'fastify';
import type { TSchema } from 'typebox';
import { CreatedToken, SessionInfo, Token, User } from './auth.js';
import { ErrorBody, Unauthenticated } from './common.js';
import { Connection, ConnectionTestResult, SourceTableView } from './connections.js';
import { Pipeline, PipelineSummary } from './pipelines.js';
import { SINK_PROPERTIES_SCHEMAS } from './sink-properties.js';
import { Provider } from './sso.js';
import { Project, RoleBinding, Workspace } from './tenancy.js';
import { Verification } from './verifications.js';

/**
 * The main resources, named: each route plugin adds them to its scope and its routes answer with
 * `ref(...)` to them, so the OpenAPI document lists them under `components.schemas` and client
 * generators emit one named type for each.
 */
const COMPONENT_SCHEMAS: readonly (TSchema & { $id?: string })[] = [
  ErrorBody,
  Unauthenticated,
  Pipeline,
  PipelineSummary,
  Connection,
  SourceTableView,
  ConnectionTestResult,
  Token,
  CreatedToken,
  User,
  SessionInfo,
  Workspace,
  Project,
  RoleBinding,
  Provider,
  Verification,
  ...SINK_PROPERTIES_SCHEMAS,
];

/** Adds the named schemas to a plugin's scope (those it inherits already are kept). */
export function addComponentSchemas(app: Pick<FastifyInstance, 'addSchema' | 'getSchema'>): void {
  for (const schema of COMPONENT_SCHEMAS) {
    if (schema.$id === undefined) throw new Error('a component schema needs an $id');
    if (app.getSchema(schema.$id) === undefined) app.addSchema(schema);
  }
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ConnectionsService } from '../../connections/connections-service.js';
import type { ConnectionTester } from '../../runtime/connection-test.js';
import type { OrphanedSlots } from '../../runtime/orphaned-slots.js';
import type { SourceTables } from '../../runtime/source-tables.js';
import { errorResponses, NameParams, ref, Unauthenticated } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import {
  Connection,
  ConnectionCreateBody,
  ConnectionReplaceBody,
  ConnectionTestBody,
  ConnectionTestQuery,
  ConnectionTestResult,
  ForceQuery,
  OrphanedSlotParams,
  SourceTableView,
} from '../schemas/connections.js';

const tags = ['connections'];

export const connectionRoutes: FastifyPluginAsyncTypebox<{
  connections: ConnectionsService;
  sourceTables: SourceTables;
  orphanedSlots: OrphanedSlots;
  tester: ConnectionTester;
}> = async (app, { connections, sourceTables, orphanedSlots, tester }) => {
  addComponentSchemas(app);
  app.get(
    '/connections',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'listConnections',
        tags,
        summary: 'List connections',
        response: { 200: Type.Array(ref(Connection)), 401: ref(Unauthenticated) },
      },
    },
    (request) => connections.list(request.ctx),
  );

  app.post(
    '/connections',
    {
      config: { permission: 'edit', action: 'connection.create' },
      schema: {
        operationId: 'createConnection',
        tags,
        summary: 'Create a connection',
        body: ConnectionCreateBody,
        response: { 201: ref(Connection), ...errorResponses(400, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const created = await connections.create(request.ctx, request.body.name, request.body);
      return reply.status(201).send(created);
    },
  );

  const testSummary =
    'answers 200 with every check, met or not (a failed check is ok: false, not an error); ' +
    'bounded to a few seconds';

  app.post(
    '/connections/test',
    {
      config: { permission: 'edit', action: 'connection.test', actionBody: true },
      schema: {
        operationId: 'testConnection',
        tags,
        summary:
          'Test a connection before saving it: reach its server and check it is usable (a postgres ' +
          'source: version, wal_level, replication rights, free slots and WAL senders), storing nothing; ' +
          testSummary,
        body: ConnectionTestBody,
        response: { 200: ref(ConnectionTestResult), ...errorResponses(400, 415, 422) },
      },
    },
    (request) => tester.testInput(request.ctx, request.body),
  );

  app.post(
    '/connections/:name/test',
    {
      config: { permission: 'edit', action: 'connection.test' },
      schema: {
        operationId: 'testStoredConnection',
        tags,
        summary: `Test a stored connection: reach its server and check it is usable; ${testSummary}`,
        params: NameParams,
        querystring: ConnectionTestQuery,
        response: { 200: ref(ConnectionTestResult), ...errorResponses(400, 404, 415, 422) },
      },
    },
    (request) => tester.testStored(request.ctx, request.params.name, request.query.as),
  );

  app.get(
    '/connections/:name',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'getConnection',
        tags,
        summary: 'Get a connection',
        params: NameParams,
        response: { 200: ref(Connection), ...errorResponses(404) },
      },
    },
    (request) => connections.get(request.ctx, request.params.name),
  );

  app.get(
    '/connections/:name/tables',
    {
      config: { permission: 'edit' },
      schema: {
        operationId: 'listConnectionTables',
        tags,
        summary:
          "The tables a source connection's role can see, each replicable or not (and why), for choosing a pipeline's tables; connects to the source",
        params: NameParams,
        response: { 200: Type.Array(ref(SourceTableView)), ...errorResponses(404, 422, 502) },
      },
    },
    (request) => sourceTables.list(request.ctx, request.params.name),
  );

  app.delete(
    '/connections/:name/orphaned-slots/:slot',
    {
      config: { permission: 'edit', action: 'connection.drop_orphaned_slot' },
      schema: {
        operationId: 'dropOrphanedSlot',
        tags,
        summary:
          "Drop a replication slot a forced pipeline delete left on the connection's source, and forget it " +
          '(also when it is gone already); 409 SLOT_NOT_DROPPED when the source cannot be reached',
        params: OrphanedSlotParams,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      await orphanedSlots.drop(request.ctx, request.params.name, request.params.slot);
      return reply.status(204).send(null);
    },
  );

  app.put(
    '/connections/:name',
    {
      config: { permission: 'edit', action: 'connection.update' },
      schema: {
        operationId: 'replaceConnection',
        tags,
        summary: 'Replace a connection (type and DSN); the name cannot change',
        params: NameParams,
        body: ConnectionReplaceBody,
        response: { 200: ref(Connection), ...errorResponses(400, 404, 415, 422) },
      },
    },
    (request) => connections.replace(request.ctx, request.params.name, request.body),
  );

  app.delete(
    '/connections/:name',
    {
      config: { permission: 'edit', action: 'connection.delete' },
      schema: {
        operationId: 'deleteConnection',
        tags,
        summary:
          'Delete a connection; refused with 409 CONNECTION_IN_USE while pipelines name it, unless force=true',
        params: NameParams,
        querystring: ForceQuery,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      await connections.delete(request.ctx, request.params.name, request.query.force === 'true');
      return reply.status(204).send(null);
    },
  );
};

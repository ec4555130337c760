import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import type { ApplyDocument, ApplyEntry, ApplyService, Problem } from '../../apply/apply-service.js';
import { noteAudit } from '../../audit/audit-note.js';
import { errorResponses } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import { ConnectionCreateBody } from '../schemas/connections.js';
import { PipelineCreateBody } from '../schemas/pipelines.js';

const ApplyBody = Type.Object(
  {
    connections: Type.Optional(
      Type.Array(Type.Unknown(), { description: 'connections, each as POST /v1/connections takes it' }),
    ),
    pipelines: Type.Optional(
      Type.Array(Type.Unknown(), { description: 'pipelines, each as POST /v1/pipelines takes it' }),
    ),
  },
  { additionalProperties: false },
);

const Flag = Type.Union([Type.Literal('true'), Type.Literal('false')]);
const ApplyQuery = Type.Object(
  {
    dry_run: Type.Optional(
      Type.Unsafe<'true' | 'false'>({ ...Flag, description: 'true: return the plan, change nothing' }),
    ),
    prune: Type.Optional(
      Type.Unsafe<'true' | 'false'>({
        ...Flag,
        description:
          "true: also delete the project's connections and stopped pipelines the document does not name",
      }),
    ),
  },
  { additionalProperties: false },
);

const Entry = Type.Object({
  name: Type.String(),
  result: Type.Union([
    Type.Literal('created'),
    Type.Literal('updated'),
    Type.Literal('unchanged'),
    Type.Literal('deleted'),
  ]),
  changes: Type.Optional(Type.Array(Type.String(), { description: 'for updated: the fields that differ' })),
  notes: Type.Optional(
    Type.Array(Type.String(), {
      description:
        'what the plan tells without comparing: a secret given in clear is never compared with the stored one ' +
        "and always counts as a change ('password supplied: will be replaced'); a pipeline whose source could " +
        'not be reached, so its tables were not checked',
    }),
  ),
});

const ApplyPlan = Type.Object({
  dry_run: Type.Boolean(),
  connections: Type.Array(Entry),
  pipelines: Type.Array(Entry),
});

/** What an apply changed (or would change): every entry but the unchanged ones. */
function changedEntries(entries: ApplyEntry[]) {
  return entries.filter((entry) => entry.result !== 'unchanged');
}

/** `/source/tables/0` under `pipelines[2]` → `pipelines[2].source.tables[0]`. */
function pathOf(prefix: string, pointer: string, missing?: unknown): string {
  const parts = pointer.split('/').filter(Boolean);
  if (Array.isArray(missing) && missing.length > 0) parts.push(String(missing[0]));
  return parts.reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : `${acc}.${part}`), prefix);
}

/** Every shape problem of the document's elements, each at its path. */
function shapeProblems(kind: 'connections' | 'pipelines', elements: unknown[]): Problem[] {
  const schema = kind === 'connections' ? ConnectionCreateBody : PipelineCreateBody;
  return elements.flatMap((element, i) =>
    [...Value.Errors(schema, element)]
      // An additionalProperties issue is reported twice (once per property, once for the object).
      .filter((issue) => issue.keyword !== 'boolean')
      .map((issue) => {
        const params = issue.params as { requiredProperties?: string[]; additionalProperties?: string[] };
        const extra = params.additionalProperties?.[0];
        return {
          path: pathOf(
            `${kind}[${i}]`,
            issue.instancePath,
            params.requiredProperties ?? (extra ? [extra] : undefined),
          ),
          message: extra
            ? 'is not a known field'
            : params.requiredProperties
              ? 'is required'
              : (issue.message ?? 'is invalid'),
        };
      }),
  );
}

/** `POST /v1/apply`: the project's connections and pipelines from one declarative document. */
export const applyRoutes: FastifyPluginAsyncTypebox<{ apply: ApplyService }> = async (app, { apply }) => {
  addComponentSchemas(app);
  app.post(
    '/apply',
    {
      config: { permission: 'edit', action: 'apply' },
      schema: {
        tags: ['pipelines'],
        operationId: 'applyDocument',
        summary:
          'Create what is missing and update what differs (connections, then pipelines); with prune, delete what the document does not name',
        description:
          'The whole document is checked before anything is written: a 422 lists every problem with its path ' +
          '(details.problems) and nothing changes. The checks that reach the servers (wal_level, tables and ' +
          'their keys, privileges, sink preflight) run for every pipeline the document creates or changes, on ' +
          'a dry run too; a source that cannot be reached is not a problem, and the plan notes it. Running ' +
          'pipelines whose definition changes reload it.',
        querystring: ApplyQuery,
        body: ApplyBody,
        response: { 200: ApplyPlan, ...errorResponses(400, 401, 403, 409, 415, 422) },
      },
    },
    async (request) => {
      const connections = request.body.connections ?? [];
      const pipelines = request.body.pipelines ?? [];
      const problems = [
        ...shapeProblems('connections', connections),
        ...shapeProblems('pipelines', pipelines),
      ];
      const options = { dryRun: request.query.dry_run === 'true', prune: request.query.prune === 'true' };
      // Noted before applying: a refused document is recorded as the dry run or the change it was.
      noteAudit(request, { details: { dry_run: options.dryRun, prune: options.prune } });
      const plan = await apply.apply(
        request.ctx,
        { connections, pipelines } as ApplyDocument,
        options,
        problems,
      );
      noteAudit(request, {
        details: { connections: changedEntries(plan.connections), pipelines: changedEntries(plan.pipelines) },
      });
      return plan;
    },
  );
};

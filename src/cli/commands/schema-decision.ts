import type { Command } from 'commander';
import { ok } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import type { CliIo } from '../io.js';

/** A proposal as `GET /v1/pipelines/{name}/schema/proposed` answers it. */
interface Proposal {
  id: string;
  table: string;
  created_at: string;
  changes: { kind: string; [field: string]: unknown }[];
  ddl: string[];
}

/**
 * `replicator approve NAME` and `replicator reject NAME`: decide the schema change a pipeline waits
 * on, showing it first. The decision names the proposal shown, so a newer one is not decided unseen.
 */
export function registerSchemaDecisions(program: Command, io: CliIo): void {
  for (const [decision, description] of [
    [
      'approve',
      'approve the schema change a pipeline waits on: its DDL runs on the sink and the pipeline resumes',
    ],
    ['reject', 'reject it: the sink keeps its columns, only those are written, and the pipeline resumes'],
  ] as const) {
    clientCommand(program, `${decision} <name>`, description).action(
      async (name: string, _flags: unknown, command: Command) => {
        const api = clientFor(command, io);
        const proposal = await ok(
          api.GET('/v1/pipelines/{name}/schema/proposed', { params: { path: { name } } }),
        );
        io.out(describeProposal(proposal));
        const path =
          decision === 'approve'
            ? '/v1/pipelines/{name}/schema/approve'
            : '/v1/pipelines/{name}/schema/reject';
        const decided = await ok(
          api.POST(path, { params: { path: { name } }, body: { proposal_id: proposal.id } }),
        );
        io.out(`pipeline ${name}: ${decided.status} the change of ${decided.table}\n`);
        if (decided.skipped_ddl && decided.skipped_ddl.length > 0) {
          io.out(`not run, the sink had it already: ${decided.skipped_ddl.join('; ')}\n`);
        }
      },
    );
  }
}

/** The change as a person reviews it: what changes, and the statements the sink would run. */
function describeProposal(p: Proposal): string {
  const changes = p.changes.map(
    (c) =>
      `  ${c.kind} ${JSON.stringify(Object.fromEntries(Object.entries(c).filter(([k]) => k !== 'kind')))}`,
  );
  const ddl = p.ddl.length > 0 ? p.ddl.map((s) => `  ${s}`) : ['  (none)'];
  return [
    `schema change of ${p.table} (proposal ${p.id}, since ${p.created_at}):`,
    ...changes,
    'DDL on the sink:',
    ...ddl,
    '',
  ].join('\n');
}

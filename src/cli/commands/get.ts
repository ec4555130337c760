import { type Command, Option } from 'commander';
import { stringify } from 'yaml';
import { type ApiClient, ok, type Schemas } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { formatAgo, formatDuration } from '../output/durations.js';
import { formatTable } from '../output/table.js';

type PipelineRow = Pick<
  Schemas['PipelineSummary'],
  'name' | 'state' | 'events_per_second' | 'replication_lag_ms' | 'last_checkpoint_at'
>;

const KINDS: Record<string, 'pipelines' | 'connections'> = {
  pipelines: 'pipelines',
  pipeline: 'pipelines',
  connections: 'connections',
  connection: 'connections',
};

const pipelineTable = (rows: readonly PipelineRow[]) =>
  formatTable(
    [
      { heading: 'name' },
      { heading: 'state' },
      { heading: 'events/s', numeric: true },
      { heading: 'lag', numeric: true },
      { heading: 'last checkpoint' },
    ],
    rows.map((p) => [
      p.name,
      p.state,
      p.events_per_second.toFixed(1),
      formatDuration(p.replication_lag_ms),
      formatAgo(p.last_checkpoint_at),
    ]),
  );

const connectionTable = (rows: readonly Schemas['Connection'][]) =>
  formatTable(
    [
      { heading: 'name' },
      { heading: 'type' },
      { heading: 'dsn' },
      { heading: 'updated' },
      { heading: 'orphaned slots', numeric: true },
    ],
    rows.map((c) => [c.name, c.type, c.dsn, formatAgo(c.updated_at), String(c.orphaned_slots.length)]),
  );

/** The slots forced deletes left on the connections' sources, each with how to drop it: they hold WAL. */
function orphanedSlotLines(rows: readonly Schemas['Connection'][]): string {
  const lines = rows.flatMap((c) =>
    c.orphaned_slots.map(
      (o) =>
        `  ${c.name}: ${o.slot} (pipeline ${o.pipeline}, deleted ${formatAgo(o.since)}): ${o.drop_statement}\n`,
    ),
  );
  if (lines.length === 0) return '';
  return (
    "\nOrphaned replication slots, holding their source's WAL until dropped " +
    '(or DELETE /v1/connections/<name>/orphaned-slots/<slot>):\n' +
    lines.join('')
  );
}

async function fetchRows(api: ApiClient, kind: 'pipelines' | 'connections', name: string | undefined) {
  if (kind === 'pipelines') {
    return name
      ? [await ok(api.GET('/v1/pipelines/{name}', { params: { path: { name } } }))]
      : await ok(api.GET('/v1/pipelines'));
  }
  return name
    ? [await ok(api.GET('/v1/connections/{name}', { params: { path: { name } } }))]
    : await ok(api.GET('/v1/connections'));
}

export function registerGet(program: Command, io: CliIo): void {
  clientCommand(
    program,
    'get <kind> [name]',
    'list pipelines or connections, or show one (kind: pipelines, connections)',
  )
    .addOption(
      new Option('-o, --output <format>', 'table, or the API objects as json or yaml')
        .choices(['table', 'json', 'yaml'])
        .default('table'),
    )
    .action(
      async (kindName: string, name: string | undefined, flags: { output: string }, command: Command) => {
        const kind = KINDS[kindName];
        if (!kind)
          throw new CliError(
            `get: unknown kind "${kindName}" (expected pipelines or connections)`,
            EXIT.usage,
          );
        const rows = await fetchRows(clientFor(command, io), kind, name);
        const value = name ? rows[0] : rows;
        if (flags.output === 'json') io.out(`${JSON.stringify(value, null, 2)}\n`);
        else if (flags.output === 'yaml') io.out(stringify(value));
        else if (rows.length === 0) io.err(`no ${kind} in this project\n`);
        else if (kind === 'pipelines') io.out(pipelineTable(rows as PipelineRow[]));
        else {
          const connections = rows as Schemas['Connection'][];
          io.out(connectionTable(connections) + orphanedSlotLines(connections));
        }
      },
    );
}

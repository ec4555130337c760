import { type Command, Option } from 'commander';
import { ok } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { formatDuration } from '../output/durations.js';
import { formatTable } from '../output/table.js';

/** `replicator runs NAME`: the pipeline's runs, newest first, with how each ended and why. */
export function registerRuns(program: Command, io: CliIo): void {
  clientCommand(
    program,
    'runs <name>',
    "a pipeline's runs, newest first: when, how long, events, how each ended and why",
  )
    .addOption(new Option('--limit <n>', 'how many, 1 to 100').default('20'))
    .addOption(
      new Option('-o, --output <format>', 'table, or the API objects as json')
        .choices(['table', 'json'])
        .default('table'),
    )
    .action(async (name: string, flags: { limit: string; output: string }, command: Command) => {
      if (!/^\d{1,3}$/.test(flags.limit) || Number(flags.limit) < 1 || Number(flags.limit) > 100) {
        throw new CliError(`--limit: must be from 1 to 100 (got "${flags.limit}")`, EXIT.usage);
      }
      const api = clientFor(command, io);
      const page = await ok(
        api.GET('/v1/pipelines/{name}/runs', { params: { path: { name }, query: { limit: flags.limit } } }),
      );
      if (flags.output === 'json') {
        io.out(`${JSON.stringify(page.runs, null, 2)}\n`);
        return;
      }
      io.out(
        formatTable(
          [
            { heading: 'started' },
            { heading: 'duration', numeric: true },
            { heading: 'events', numeric: true },
            { heading: 'outcome' },
            { heading: 'error' },
          ],
          page.runs.map((r) => [
            r.started_at,
            formatDuration(r.duration_ms),
            String(r.events_total),
            r.outcome,
            r.error ?? '',
          ]),
        ),
      );
    });
}

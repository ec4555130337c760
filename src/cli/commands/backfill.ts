import { type Command, Option } from 'commander';
import { ok } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { waitForCopy } from '../wait-for-copy.js';

/**
 * `replicator backfill NAME TABLE... [--wait]`: copies tables of a pipeline again, the way back
 * from a sink table changed behind the pipeline's back (SINK_TABLE_CHANGED).
 */
export function registerBackfill(program: Command, io: CliIo): void {
  clientCommand(
    program,
    'backfill <name> <tables...>',
    'copy tables (schema.table) of a pipeline again: each sink table is emptied, or created again, and ' +
      'refilled from the source; a failed pipeline is started to do it',
  )
    .option('--wait', 'wait until the tables are copied and the pipeline streams')
    .addOption(new Option('--timeout <seconds>', 'with --wait: give up after this long').default('3600'))
    .action(
      async (
        name: string,
        tables: string[],
        flags: { wait?: boolean; timeout: string },
        command: Command,
      ) => {
        const timeoutSeconds = Number(flags.timeout);
        if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
          throw new CliError(`--timeout: must be a number of seconds (got "${flags.timeout}")`, EXIT.usage);
        }
        const api = clientFor(command, io);
        const accepted = await ok(
          api.POST('/v1/pipelines/{name}/backfill', { params: { path: { name } }, body: { tables } }),
        );
        const later = accepted.state === 'stopped' || accepted.state === 'paused';
        io.out(
          `pipeline ${name}: ${accepted.state}, ${later ? 'will copy' : 'copying'} ${accepted.tables.join(', ')} again` +
            `${later ? ` when it starts (\`replicator ${accepted.state === 'paused' ? 'resume' : 'start'} ${name}\`)` : ''}\n`,
        );
        if (flags.wait && !later) await waitForCopy(api, name, timeoutSeconds * 1000, io);
      },
    );
}

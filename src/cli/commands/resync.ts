import { type Command, Option } from 'commander';
import { ok } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { waitForCopy } from '../wait-for-copy.js';

/** `replicator resync NAME [--wait]`: the way back after a lost or dropped slot. */
export function registerResync(program: Command, io: CliIo): void {
  clientCommand(
    program,
    'resync <name>',
    'resync a stopped or failed pipeline: a new slot, every table emptied and copied again, then streaming',
  )
    .option('--wait', 'wait until every table is copied again and the pipeline streams')
    .addOption(new Option('--timeout <seconds>', 'with --wait: give up after this long').default('3600'))
    .action(async (name: string, flags: { wait?: boolean; timeout: string }, command: Command) => {
      const timeoutSeconds = Number(flags.timeout);
      if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
        throw new CliError(`--timeout: must be a number of seconds (got "${flags.timeout}")`, EXIT.usage);
      }
      const api = clientFor(command, io);
      const accepted = await ok(api.POST('/v1/pipelines/{name}/resync', { params: { path: { name } } }));
      io.out(`pipeline ${name}: ${accepted.state}, copying ${accepted.tables.join(', ')} again\n`);
      if (flags.wait) await waitForCopy(api, name, timeoutSeconds * 1000, io);
    });
}

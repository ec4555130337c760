import type { Command } from 'commander';
import { ok } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import type { CliIo } from '../io.js';

/** `replicator delete NAME [--force]`: stops a pipeline and deletes it, with its slot at the source. */
export function registerDelete(program: Command, io: CliIo): void {
  clientCommand(
    program,
    'delete <name>',
    "delete a pipeline: it is stopped, and its slot and publication dropped at the source (the sink's tables are kept)",
  )
    .option(
      '--force',
      'delete it even when its slot cannot be dropped (the source unreachable): the slot is then left to drop by hand',
    )
    .action(async (name: string, flags: { force?: boolean }, command: Command) => {
      const api = clientFor(command, io);
      const call = api.DELETE('/v1/pipelines/{name}', {
        params: { path: { name }, query: flags.force ? { force: 'true' } : {} },
      });
      await ok(call);
      io.out(`pipeline ${name}: deleted\n`);
      const orphan = (await call).response.headers.get('x-orphaned-slot');
      if (orphan) io.err(`left at the source, to drop by hand: replication slot ${orphan}\n`);
    });
}

import { type Command, Option } from 'commander';
import { ok } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import { readDocument } from '../document-file.js';
import type { CliIo } from '../io.js';
import { formatPlan } from '../output/plan.js';

export function registerApply(program: Command, io: CliIo): void {
  clientCommand(
    program,
    'apply',
    'create what a YAML or JSON document declares and is missing, update what differs',
  )
    .requiredOption('-f, --file <file>', 'the document, with connections and pipelines (- reads stdin)')
    .option('--dry-run', 'print the plan and change nothing')
    .option(
      '--prune',
      "also delete the project's connections and stopped pipelines the document does not name",
    )
    .addOption(
      new Option('-o, --output <format>', 'how to print the plan').choices(['text', 'json']).default('text'),
    )
    .action(
      async (
        flags: { file: string; dryRun?: boolean; prune?: boolean; output: string },
        command: Command,
      ) => {
        const body = readDocument(flags.file, io.env);
        const plan = await ok(
          clientFor(command, io).POST('/v1/apply', {
            body,
            params: {
              query: {
                ...(flags.dryRun ? { dry_run: 'true' as const } : {}),
                ...(flags.prune ? { prune: 'true' as const } : {}),
              },
            },
          }),
        );
        io.out(flags.output === 'json' ? `${JSON.stringify(plan, null, 2)}\n` : formatPlan(plan));
      },
    );
}

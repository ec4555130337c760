import { Command } from 'commander';
import { VERSION } from '../version.js';
import { registerApply } from './commands/apply.js';
import { registerBackfill } from './commands/backfill.js';
import { registerDelete } from './commands/delete.js';
import { registerExport } from './commands/export.js';
import { registerGet } from './commands/get.js';
import { registerLifecycle } from './commands/lifecycle.js';
import { registerResync } from './commands/resync.js';
import { registerRuns } from './commands/runs.js';
import { registerSchemaDecisions } from './commands/schema-decision.js';
import { registerStatus } from './commands/status.js';
import { registerVerifications } from './commands/verifications.js';
import { registerVerify } from './commands/verify.js';
import { EXIT } from './exit-codes.js';
import type { CliIo } from './io.js';
import { runServerCommand } from './server-commands.js';

const CLIENT_HELP = `
The service's own flags: replicator serve --help

Client commands reach a running service at --url or REPLICATOR_URL, with the API token of
--token-file or REPLICATOR_TOKEN when authentication is enabled.

Exit status: ${EXIT.ok} done, ${EXIT.failed} the request failed or was refused, ${EXIT.usage} bad usage or an unreadable document
(for serve: an invalid configuration), ${EXIT.dataDirInUse} the data directory is in use by another process,
${EXIT.unreachable} the service cannot be reached, ${EXIT.unauthorized} the token is missing, refused or lacks the role;
verify --wait: ${EXIT.differs} the sink differs from the source, ${EXIT.notVerified} some tables could not be compared.
`;

/** The `replicator` command line: the service itself, and the client commands that drive one. */
export function buildProgram(io: CliIo): Command {
  const program = new Command('replicator')
    .description('Replicates a PostgreSQL source into sinks through logical replication.')
    .usage('<command> [flags]')
    .version(VERSION, '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .showSuggestionAfterError()
    .addHelpText('after', CLIENT_HELP);

  // The service's flags are parsed by the configuration, which also reads them from the
  // environment and a file; commander only routes to it.
  for (const [name, description] of [
    ['serve', 'run the service (the default command; serve --help lists its flags)'],
    ['migrate', "apply the metadata store's migrations and exit"],
  ] as const) {
    program
      .command(name)
      .description(description)
      .helpGroup('Service commands:')
      .helpOption(false)
      .allowUnknownOption()
      .allowExcessArguments()
      .action((_flags, command: Command) => runServerCommand([name, ...command.args], io));
  }
  program
    .command('version')
    .description('print the version')
    .helpGroup('Service commands:')
    .action(() => io.out(`${VERSION}\n`));

  registerApply(program, io);
  registerExport(program, io);
  registerGet(program, io);
  registerStatus(program, io);
  registerLifecycle(program, io);
  registerResync(program, io);
  registerBackfill(program, io);
  registerSchemaDecisions(program, io);
  registerRuns(program, io);
  registerDelete(program, io);
  registerVerify(program, io);
  registerVerifications(program, io);
  return program;
}

/** Flags that say where the service is and as whom: a client command takes them before its name too. */
const TARGET_FLAGS = ['--url', '--token', '--token-file', '--request-timeout', '--project'];

/**
 * With no command, or only flags, the command is `serve`, as before there were others. Flags that
 * say where the service is, given before a client command (`replicator --url X get pipelines`), are
 * moved after it, where that command reads them.
 */
export function withDefaultCommand(
  argv: readonly string[],
  clientCommands: ReadonlySet<string> = new Set(),
): string[] {
  const first = argv[0];
  const programFlag = first === '-h' || first === '--help' || first === '-V' || first === '--version';
  const leading: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const arg = argv[i] as string;
    const flag = TARGET_FLAGS.find((f) => arg === f || arg.startsWith(`${f}=`));
    if (!flag) break;
    const takesNext = arg === flag && i + 1 < argv.length;
    leading.push(...argv.slice(i, i + (takesNext ? 2 : 1)));
    i += takesNext ? 2 : 1;
  }
  const command = argv[i];
  if (leading.length > 0 && command !== undefined && clientCommands.has(command)) {
    return [command, ...argv.slice(i + 1), ...leading];
  }
  return first === undefined || (first.startsWith('-') && !programFlag) ? ['serve', ...argv] : [...argv];
}

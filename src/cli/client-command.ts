import { type Command, Option } from 'commander';
import { type ApiClient, createApiClient } from '../client/api-client.js';
import type { CliIo } from './io.js';
import { DEFAULT_URL, serviceTarget, type TargetFlags } from './service-target.js';

const SERVICE_FLAGS = [
  new Option('--url <url>', `the service (env REPLICATOR_URL, default ${DEFAULT_URL})`),
  new Option('--token-file <file>', 'read the API token from a file (or set REPLICATOR_TOKEN)'),
  new Option(
    '--token <token>',
    'the API token; other users can see it in the process list, prefer the above',
  ),
  new Option('--request-timeout <seconds>', 'give up on a request after this long (default 30)'),
  new Option(
    '--project <name>',
    'with authentication off: act in this project only (env REPLICATOR_PROJECT); with it on, the token decides',
  ),
];

/** A command that talks to a running service, with the flags that say where and as whom. */
export function clientCommand(program: Command, nameAndArgs: string, description: string): Command {
  const command = program.command(nameAndArgs).description(description).helpGroup('Client commands:');
  for (const flag of SERVICE_FLAGS) command.addOption(flag.helpGroup('Reaching the service:'));
  return command;
}

/** The API client for a client command's flags. */
export function clientFor(command: Command, io: CliIo): ApiClient {
  return createApiClient(
    serviceTarget(command.optsWithGlobals<TargetFlags>(), io.env, (line) => io.err(`${line}\n`)),
  );
}

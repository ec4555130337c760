import { type Command, Option } from 'commander';
import { ok } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { formatVerification, formatVerificationList } from '../output/verification.js';
import { waitForVerification } from '../wait-for-verification.js';
import { endWith, positiveNumber } from './verify.js';

const outputOption = () =>
  new Option('-o, --output <format>', 'text, or the API objects as json')
    .choices(['text', 'json'])
    .default('text');

/** `replicator verifications NAME` lists a pipeline's verifications; `replicator verification NAME ID` shows one. */
export function registerVerifications(program: Command, io: CliIo): void {
  clientCommand(program, 'verifications <name>', "a pipeline's verifications, newest first, one a line")
    .option('--limit <n>', 'how many, 1 to 100', '20')
    .addOption(outputOption())
    .action(async (name: string, flags: { limit: string; output: string }, command: Command) => {
      if (!/^[0-9]{1,3}$/.test(flags.limit) || Number(flags.limit) < 1 || Number(flags.limit) > 100) {
        throw new CliError(`--limit: must be a number from 1 to 100 (got "${flags.limit}")`, EXIT.usage);
      }
      const { verifications } = await ok(
        clientFor(command, io).GET('/v1/pipelines/{name}/verifications', {
          params: { path: { name }, query: { limit: flags.limit } },
        }),
      );
      if (flags.output === 'json') io.out(`${JSON.stringify(verifications, null, 2)}\n`);
      else if (verifications.length === 0) io.err(`pipeline ${name} has not been verified\n`);
      else io.out(formatVerificationList(verifications));
    });

  clientCommand(
    program,
    'verification <name> <id>',
    `one verification of a pipeline, per table; with --wait, waits for it to end and exits as \`verify --wait\` does`,
  )
    .option('--wait', 'wait until it ends')
    .addOption(new Option('--timeout <seconds>', 'with --wait: give up after this long').default('3600'))
    .addOption(outputOption())
    .action(
      async (
        name: string,
        id: string,
        flags: { wait?: boolean; timeout: string; output: string },
        command: Command,
      ) => {
        const timeoutSeconds = positiveNumber('--timeout', flags.timeout);
        const api = clientFor(command, io);
        const json = flags.output === 'json';
        const v = flags.wait
          ? await waitForVerification(api, name, id, Date.now() + timeoutSeconds * 1000, (line) =>
              (json ? io.err : io.out)(`${line}\n`),
            )
          : await ok(api.GET('/v1/pipelines/{name}/verifications/{id}', { params: { path: { name, id } } }));
        io.out(json ? `${JSON.stringify(v, null, 2)}\n` : formatVerification(v));
        if (flags.wait) endWith(v);
      },
    );
}

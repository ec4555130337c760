import { type Command, Option } from 'commander';
import { type ApiClient, ok, type Schemas } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { formatVerification } from '../output/verification.js';
import { waitForRepair, waitForVerification } from '../wait-for-verification.js';

type Verification = Schemas['Verification'];

interface VerifyFlags {
  table: string[];
  sourceShare?: string;
  wait?: boolean;
  repair?: boolean;
  timeout: string;
  output: string;
}

/**
 * Ends the command with the verdict of an ended verification: nothing for a match, else one line
 * and an exit status that lets a script tell "differs" from "could not look".
 */
export function endWith(v: Verification): void {
  if (v.status === 'failed')
    throw new CliError(`verification ${v.id} failed: ${v.error ?? 'no error recorded'}`, EXIT.failed);
  if (v.status !== 'completed') throw new CliError(`verification ${v.id} was ${v.status}`, EXIT.failed);
  if (v.result === 'differs') {
    throw new CliError(
      `pipeline ${v.pipeline}: the sink differs from the source (verification ${v.id})`,
      EXIT.differs,
    );
  }
  if (v.result === 'not_verified') {
    throw new CliError(
      `pipeline ${v.pipeline}: some tables could not be verified (verification ${v.id})`,
      EXIT.notVerified,
    );
  }
}

/** A flag's number, above 0 and at most `max`; anything else is bad usage. */
export function positiveNumber(flag: string, value: string, max = Number.POSITIVE_INFINITY): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > max) {
    throw new CliError(
      `${flag}: must be a number above 0${max < Infinity ? ` and at most ${max}` : ''} (got "${value}")`,
      EXIT.usage,
    );
  }
  return n;
}

/** Asks for the repair of what `v` found, then waits for the repair and the verification of its tables. */
async function repair(
  api: ApiClient,
  name: string,
  v: Verification,
  deadline: number,
  report: (line: string) => void,
): Promise<Verification> {
  await ok(
    api.POST('/v1/pipelines/{name}/verifications/{id}/repair', { params: { path: { name, id: v.id } } }),
  );
  const repaired = await waitForRepair(api, name, v.id, deadline, report);
  const followUp = repaired.repair?.verification_id;
  if (repaired.repair?.status !== 'completed' || !followUp) {
    throw new CliError(
      `the repair of verification ${v.id} failed: ${repaired.repair?.error ?? 'no error recorded'}`,
      EXIT.failed,
    );
  }
  return waitForVerification(api, name, followUp, deadline, report);
}

/**
 * `replicator verify NAME`: compares a pipeline's sink with its source; `--wait` waits for the
 * verdict, `--repair` also copies the differing rows again and verifies them once more.
 */
export function registerVerify(program: Command, io: CliIo): void {
  clientCommand(
    program,
    'verify <name>',
    "compare a running pipeline's sink with its source, table by table and row by row (SQL sinks); " +
      `with --wait, exits ${EXIT.ok} when they match, ${EXIT.differs} when rows differ, ${EXIT.notVerified} when some tables could not be compared`,
  )
    .addOption(
      new Option('--table <table>', 'verify this schema.table only (repeatable)')
        .argParser((value: string, previous: string[]) => [...previous, value])
        .default([], 'every table'),
    )
    .option('--source-share <share>', "the share (0 to 1] of the source's time it may take (default 1)")
    .option('--wait', 'wait for the verdict and print it per table')
    .option(
      '--repair',
      'with a difference: copy the differing rows again and verify them again (implies --wait)',
    )
    .addOption(new Option('--timeout <seconds>', 'with --wait: give up after this long').default('3600'))
    .addOption(
      new Option('-o, --output <format>', 'text, or the API objects as json')
        .choices(['text', 'json'])
        .default('text'),
    )
    .action(async (name: string, flags: VerifyFlags, command: Command) => {
      const deadline = Date.now() + positiveNumber('--timeout', flags.timeout) * 1000;
      const body = {
        ...(flags.table.length ? { tables: flags.table } : {}),
        ...(flags.sourceShare === undefined
          ? {}
          : { source_share: positiveNumber('--source-share', flags.sourceShare, 1) }),
      };
      const json = flags.output === 'json';
      // Progress goes to stderr with json, so that stdout stays one document.
      const report = (line: string) => (json ? io.err : io.out)(`${line}\n`);
      const api = clientFor(command, io);
      const queued = await ok(api.POST('/v1/pipelines/{name}/verify', { params: { path: { name } }, body }));
      if (!flags.wait && !flags.repair) {
        if (json) io.out(`${JSON.stringify(queued, null, 2)}\n`);
        else {
          io.out(
            `verification ${queued.id} of pipeline ${name}: ${queued.status}\n` +
              `follow it with \`replicator verification ${name} ${queued.id} --wait\`\n`,
          );
        }
        return;
      }
      const ended = await waitForVerification(api, name, queued.id, deadline, report);
      if (!flags.repair || ended.status !== 'completed' || ended.result !== 'differs') {
        io.out(json ? `${JSON.stringify(ended, null, 2)}\n` : formatVerification(ended));
        return endWith(ended);
      }
      if (!json) io.out(formatVerification(ended));
      const followUp = await repair(api, name, ended, deadline, report);
      const repaired = await ok(
        api.GET('/v1/pipelines/{name}/verifications/{id}', { params: { path: { name, id: ended.id } } }),
      );
      io.out(
        json
          ? `${JSON.stringify({ verification: repaired, repair_verification: followUp }, null, 2)}\n`
          : formatVerification(followUp),
      );
      endWith(followUp);
    });
}

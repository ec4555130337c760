import { type Command, Option } from 'commander';
import { PIPELINE_ACTIONS, type PipelineAction } from '../../../machines/pipeline.js';
import { type ApiClient, ApiError, ok } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { waitForCopy } from '../wait-for-copy.js';

/** The state each action leads to, which `--wait` waits for. */
const TARGET: Record<PipelineAction, string> = {
  start: 'running',
  stop: 'stopped',
  pause: 'paused',
  resume: 'running',
};

const POLL_MS = 500;

export function registerLifecycle(program: Command, io: CliIo): void {
  for (const action of PIPELINE_ACTIONS) {
    const command = clientCommand(program, `${action} <name>`, `${action} a pipeline`)
      .option('--wait', `wait until the pipeline is ${TARGET[action]} (done at once if it already is)`)
      .addOption(new Option('--timeout <seconds>', 'with --wait: give up after this long').default('300'));
    if (action === 'start') {
      command.addOption(
        new Option(
          '--until <phase>',
          'with --wait: running (the default), or streaming: every table copied and the pipeline streaming',
        )
          .choices(['running', 'streaming'])
          .default('running'),
      );
    }
    command.action(
      async (name: string, flags: { wait?: boolean; timeout: string; until?: string }, command: Command) => {
        const timeoutSeconds = Number(flags.timeout);
        if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
          throw new CliError(`--timeout: must be a number of seconds (got "${flags.timeout}")`, EXIT.usage);
        }
        const api = clientFor(command, io);
        const pipeline = await ok(
          api.PUT('/v1/pipelines/{name}/state', { params: { path: { name } }, body: { state: action } }),
        ).catch(async (error: unknown) => {
          // With --wait the command means "be in that state": already there is done, so that a
          // deployment step can run it every time.
          if (!flags.wait || !(error instanceof ApiError) || error.code !== 'INVALID_TRANSITION') throw error;
          const current = await ok(api.GET('/v1/pipelines/{name}', { params: { path: { name } } }));
          if (current.state !== TARGET[action]) throw error;
          return current;
        });
        io.out(`pipeline ${name}: ${pipeline.state}\n`);
        if (flags.wait && pipeline.state !== TARGET[action]) {
          await waitForState(api, name, TARGET[action], timeoutSeconds * 1000, io);
        }
        if (flags.wait && flags.until === 'streaming')
          await waitForCopy(api, name, timeoutSeconds * 1000, io);
      },
    );
  }
}

/** Polls the pipeline until it is in `target`; a failure, or a wait for schema review, ends the wait. */
async function waitForState(api: ApiClient, name: string, target: string, timeoutMs: number, io: CliIo) {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const pipeline = await ok(api.GET('/v1/pipelines/{name}', { params: { path: { name } } }));
    if (pipeline.state !== last) {
      last = pipeline.state;
      if (pipeline.state !== target) io.out(`pipeline ${name}: ${pipeline.state}\n`);
    }
    if (pipeline.state === target) {
      io.out(`pipeline ${name}: ${target}\n`);
      return;
    }
    if (pipeline.state === 'failed') {
      throw new CliError(`pipeline ${name} failed: ${pipeline.error ?? 'no error recorded'}`, EXIT.failed);
    }
    if (pipeline.state === 'pending_schema_approval' && target === 'running') {
      throw new CliError(
        `pipeline ${name} waits for a schema change to be reviewed: see \`replicator status ${name}\``,
        EXIT.failed,
      );
    }
  }
  throw new CliError(
    `pipeline ${name} was not ${target} after ${timeoutMs / 1000} s (it is ${last || 'unchanged'})`,
    EXIT.failed,
  );
}

import { CommanderError } from 'commander';
import { ApiError, ServiceUnreachableError } from '../client/api-client.js';
import { ConfigError } from '../config/options.js';
import { DataDirInUseError } from '../store/data-dir-lock.js';
import { CliError, EXIT } from './exit-codes.js';

/** One message and the exit status for a failed command. */
export function describeFailure(error: unknown): { code: number; message: string } {
  if (error instanceof CommanderError)
    return { code: error.exitCode === 0 ? EXIT.ok : EXIT.usage, message: '' };
  if (error instanceof ConfigError) return { code: EXIT.usage, message: error.message };
  if (error instanceof DataDirInUseError)
    return { code: EXIT.dataDirInUse, message: `replicator: ${error.message}` };
  if (error instanceof CliError) return { code: error.exitCode, message: `replicator: ${error.message}` };
  if (error instanceof ServiceUnreachableError)
    return { code: EXIT.unreachable, message: `replicator: ${error.message}` };
  if (error instanceof ApiError) {
    const problems = error.problems.map((p) => `\n  ${p.path}: ${p.message}`).join('');
    if (error.status === 401) {
      return {
        code: EXIT.unauthorized,
        message:
          'replicator: the service refused the request without a valid token: give one with --token-file or REPLICATOR_TOKEN',
      };
    }
    const head = problems
      ? `the document has ${error.problems.length} problem${error.problems.length > 1 ? 's' : ''}`
      : error.message;
    return {
      code: error.status === 403 ? EXIT.unauthorized : EXIT.failed,
      message: `replicator: ${head} (${error.status} ${error.code})${problems}`,
    };
  }
  return { code: EXIT.failed, message: `replicator: ${(error as Error).message}` };
}

import { readFileSync } from 'node:fs';
import type { ServiceTarget } from '../client/api-client.js';
import { CliError, EXIT } from './exit-codes.js';

/** The flags every client command takes. */
export interface TargetFlags {
  url?: string;
  token?: string;
  tokenFile?: string;
  requestTimeout?: string;
  project?: string;
}

export const DEFAULT_URL = 'http://127.0.0.1:7600';
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/**
 * Where the client commands reach the service: flags first, then REPLICATOR_URL and
 * REPLICATOR_TOKEN. A token sent in clear text to another machine is warned about.
 */
export function serviceTarget(
  flags: TargetFlags,
  env: NodeJS.ProcessEnv,
  warn: (line: string) => void,
): ServiceTarget {
  const url = flags.url ?? env.REPLICATOR_URL ?? DEFAULT_URL;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`--url: "${url}" is not a URL (e.g. ${DEFAULT_URL})`, EXIT.usage);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CliError(`--url: must be http:// or https:// (got ${parsed.protocol})`, EXIT.usage);
  }
  if (parsed.username || parsed.password) {
    throw new CliError(
      '--url: must not hold credentials; give a token with --token-file or REPLICATOR_TOKEN',
      EXIT.usage,
    );
  }
  const token = flags.token ?? readTokenFile(flags.tokenFile) ?? (env.REPLICATOR_TOKEN || undefined);
  if (token && parsed.protocol === 'http:' && !LOOPBACK.test(parsed.hostname)) {
    warn(`warning: sending the token unencrypted to ${parsed.host}; use https://`);
  }
  const seconds = flags.requestTimeout === undefined ? 30 : Number(flags.requestTimeout);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new CliError(
      `--request-timeout: must be a number of seconds (got "${flags.requestTimeout}")`,
      EXIT.usage,
    );
  }
  const project = flags.project ?? (env.REPLICATOR_PROJECT || undefined);
  return { url: parsed.href, token, timeoutMs: seconds * 1000, ...(project ? { project } : {}) };
}

function readTokenFile(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  try {
    const token = readFileSync(path, 'utf8').trim();
    if (!token) throw new CliError(`--token-file: ${path} is empty`, EXIT.usage);
    return token;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(
      `--token-file: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      EXIT.usage,
    );
  }
}

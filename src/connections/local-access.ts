import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { AppError } from '../errors/app-error.js';

/**
 * What the operator lets a connection reach on the service's own machine. Both are off by
 * default: a caller who may edit connections must not make the service read its files or talk to
 * a database over a local socket, where trust rules could make that caller a superuser.
 */
export interface LocalAccessPolicy {
  /** `connections.allow_unix_sockets`: DSNs may name a Unix socket directory as host. */
  allowUnixSockets: boolean;
  /** `connections.tls_file_dir`: sslrootcert, sslcert and sslkey may name files inside it. */
  tlsFileDir: string | undefined;
  /** The service's data directory, absolute: where a file-based sink's relative path lives. */
  dataDir: string | undefined;
  /** `connections.duckdb_dirs`: absolute directories a DuckDB DSN may name a database file in. */
  duckdbDirs: readonly string[];
  /** `connections.webhook_allow_private`: webhooks may reach loopback, private and link-local addresses, over http too. */
  webhookAllowPrivate: boolean;
  /**
   * The project the connection belongs to, set per call: a file-based sink's files are confined
   * to its directory. Unset means the default project.
   */
  projectId?: string;
}

export const NO_LOCAL_ACCESS: LocalAccessPolicy = {
  allowUnixSockets: false,
  tlsFileDir: undefined,
  dataDir: undefined,
  duckdbDirs: [],
  webhookAllowPrivate: false,
};

/** Certificates and keys are small; a CA bundle of every public root is about 220 KiB. */
export const TLS_FILE_MAX_BYTES = 512 * 1024;

/**
 * Reads a PEM file named by a DSN from the operator's TLS directory: after symlinks are resolved
 * it must still be inside that directory, and be a regular file of bounded size. It is opened
 * non-blocking, so a FIFO or device cannot stall the process. The error never says which check
 * failed, so it cannot be used to probe the file system.
 */
export async function readTlsFile(policy: LocalAccessPolicy, key: string, name: string): Promise<string> {
  const refused = () =>
    new AppError(
      'INVALID_DSN',
      `dsn: parameter '${key}' names no readable regular file (at most ${TLS_FILE_MAX_BYTES / 1024} KiB) inside connections.tls_file_dir`,
      { field: 'dsn' },
    );
  if (policy.tlsFileDir === undefined) throw refused();
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    const dir = await realpath(policy.tlsFileDir);
    const path = await realpath(resolve(dir, name));
    const within = relative(dir, path);
    if (within === '' || within.startsWith('..')) throw refused();
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    const stat = await handle.stat();
    if (!stat.isFile() || stat.size > TLS_FILE_MAX_BYTES) throw refused();
    const buffer = Buffer.alloc(stat.size);
    const { bytesRead } = await handle.read(buffer, 0, stat.size, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } catch {
    throw refused();
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { HttpSettings } from '../config/options.js';

/** Assumed when the open-file limit cannot be read (not Linux): the usual soft limit. */
const DEFAULT_FD_LIMIT = 1024;

/** How often Node looks for requests past their header or body time limit (its default is 30 s). */
export const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/** The process's soft limit on open files, from /proc/self/limits; undefined where there is none. */
export function openFileLimit(limitsText?: string): number | undefined {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  if (soft === undefined) return undefined;
  if (soft === 'unlimited') return Number.MAX_SAFE_INTEGER;
  const n = Number(soft);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * Connections the server accepts in all. `auto` keeps half the open-file limit for what is not
 * the API (replication streams, sink and store connections, spool files), so that a flood of
 * HTTP connections cannot make a pipeline's reconnect fail with EMFILE.
 */
export function connectionBudget(setting: HttpSettings['maxConnections'], fdLimit?: number): number {
  if (setting !== 'auto') return setting;
  const limit = Math.min(fdLimit ?? openFileLimit() ?? DEFAULT_FD_LIMIT, 1_000_000);
  return Math.max(32, Math.floor(limit / 2));
}

/**
 * Bounds what HTTP clients may hold open: connections in all (beyond it Node drops new ones),
 * and per client address (beyond it a new connection is closed at once, before anything is read).
 */
export function installConnectionLimits(server: Server, settings: HttpSettings): void {
  server.maxConnections = connectionBudget(settings.maxConnections);
  const perAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined) return;
    const open = (perAddress.get(address) ?? 0) + 1;
    if (open > settings.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    perAddress.set(address, open);
    socket.once('close', () => {
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left <= 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
  });
}

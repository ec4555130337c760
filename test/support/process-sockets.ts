import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * The local ports of the TCP sockets a process has open (Linux, through /proc). A PostgreSQL
 * backend's `client_port` (pg_stat_activity, pg_stat_replication, inet_client_port()) is one of
 * these when that process is its client, which tells apart the connections of two service
 * processes that use the same application_name. It works on a stopped (SIGSTOP) process too.
 */
export function localTcpPorts(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match?.[1]) inodes.add(match[1]);
    } catch {
      // closed while listing
    }
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const inode = fields[9];
      const local = fields[1];
      if (!inode || !local || !inodes.has(inode)) continue;
      ports.add(Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16));
    }
  }
  return ports;
}

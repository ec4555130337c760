import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqlOn } from '../test/support/replication-fixture.js';

/** CPU seconds used so far (user + system), by who used them. */
export interface CpuSample {
  /** This process: the benchmark and the service running in it. */
  self: number;
  /** Children of this process that have exited and been waited for (the psql pipe). */
  children: number;
  /** Every process of the source cluster, exited backends included. */
  source: number;
  sink: number;
}

let ticks: number | undefined;
export const clockTicks = () => {
  ticks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ticks;
};

/** utime, stime, cutime, cstime (in ticks) and the parent pid from /proc/<pid>/stat. */
export function procStat(pid: number | 'self'): { ppid: number; own: number; reaped: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which sits in parentheses and may hold spaces.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const n = (i: number) => Number(f[i]);
    return { ppid: n(1), own: n(11) + n(12), reaped: n(13) + n(14) };
  } catch {
    return undefined; // the process is gone
  }
}

/** The postmaster of a cluster, from the pid file in its data directory. */
export async function postmasterPid(adminUrl: string): Promise<number> {
  const [row] = await sqlOn<{ dir: string }>(adminUrl, "SELECT current_setting('data_directory') AS dir");
  return Number(readFileSync(join(row?.dir as string, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

/**
 * A cluster's CPU: the postmaster's own and that of its children it has waited for (backends that
 * ended), plus every live child's own. A child alive at both samples counts its own time in both,
 * one that ended between them moves into the postmaster's reaped time: the difference is exact.
 */
function clusterTicks(postmaster: number, pids: number[]): number {
  const main = procStat(postmaster);
  let total = main ? main.own + main.reaped : 0;
  for (const pid of pids) {
    const s = procStat(pid);
    if (s?.ppid === postmaster) total += s.own;
  }
  return total;
}

export function cpuSample(sourcePostmaster: number, sinkPostmaster: number): CpuSample {
  const pids = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
  const self = procStat('self');
  const hz = clockTicks();
  return {
    self: (self?.own ?? 0) / hz,
    children: (self?.reaped ?? 0) / hz,
    source: clusterTicks(sourcePostmaster, pids) / hz,
    sink: clusterTicks(sinkPostmaster, pids) / hz,
  };
}

export const cpuUsed = (before: CpuSample, after: CpuSample): CpuSample => ({
  self: after.self - before.self,
  children: after.children - before.children,
  source: after.source - before.source,
  sink: after.sink - before.sink,
});

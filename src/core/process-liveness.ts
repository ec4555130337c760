import { readFileSync } from 'node:fs';

/**
 * The state and start time (field 22 of /proc/<pid>/stat) of a process on Linux, which tell a live
 * process from a zombie or from a later process given the same pid; null where there is no /proc.
 */
export function processStat(pid: number): { state: string; startTime: string } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which is in parentheses and may hold spaces or ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', startTime: fields[19] ?? '' };
  } catch {
    return null;
  }
}

/**
 * Whether the process `pid` of this machine, started at `startTime` (null: unknown), still runs.
 * Another pid namespace's processes are not visible: callers only judge owners of their own host.
 */
export function processAlive(pid: number, startTime: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = processStat(pid);
  if (!stat) return true;
  return stat.state !== 'Z' && (startTime === null || stat.startTime === startTime);
}

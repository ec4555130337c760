import type { DatabasePool } from 'slonik';
import { projectScope, type RequestContext } from '../context.js';
import { workersStore } from '../store/workers-store.js';

/** One instance of the fleet, as the API shows it. */
export interface WorkerView {
  id: string;
  hostname: string;
  pid: number;
  version: string;
  started_at: string;
  last_heartbeat_at: string;
  /** `live`, `stale` (no heartbeat within the lease time) or `stopped`. */
  status: 'live' | 'stale' | 'stopped';
  /** Pipelines of the caller's project it holds a live lease on; every project's when filtering is off. */
  pipelines: string[];
}

/** The instances sharing the metadata database, for the people who run them. */
export class WorkersService {
  constructor(
    private readonly pool: DatabasePool,
    /** A worker whose heartbeat is older than this is stale. */
    private readonly leaseTtlMs: number,
  ) {}

  /** The workers of the fleet, newest first. */
  async list(ctx: RequestContext): Promise<WorkerView[]> {
    const rows = await workersStore.list(this.pool, this.leaseTtlMs, projectScope(ctx));
    return rows.map((w) => ({
      id: w.id,
      hostname: w.hostname,
      pid: w.pid,
      version: w.version,
      started_at: w.started_at,
      last_heartbeat_at: w.heartbeat_at,
      status: w.stopped_at ? 'stopped' : w.live ? 'live' : 'stale',
      pipelines: w.pipelines,
    }));
  }
}

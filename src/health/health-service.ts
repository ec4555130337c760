import { type DatabasePool, sql } from 'slonik';
import { DEFAULT_LEASE_TTL_MS } from '../fleet/worker-registry.js';
import { pipelinesStore } from '../store/pipelines-store.js';
import { workersStore } from '../store/workers-store.js';
import { VERSION } from '../version.js';

interface Check {
  name: string;
  status: 'ok' | 'failing';
  erroring_since: string | null;
  message: string | null;
}

/**
 * Answers GET /v1/health: the store check, the fleet's live workers, and the running pipelines of
 * the caller's project (of every project while project filtering is off).
 */
export class HealthService {
  private storeFailingSince: string | null = null;
  // Last known counts, reported while the store cannot be asked.
  private workers = 0;
  // By project; the key null is every project. Bounded by the number of projects.
  private readonly pipelinesRunning = new Map<string | null, number>();
  // Refreshes can overlap (a request during a background one): only the latest started one counts.
  private refreshesStarted = 0;
  private latestApplied = 0;
  private readonly timer: NodeJS.Timeout;
  private backgroundBusy = false;

  constructor(
    private readonly pool: DatabasePool,
    /** A worker silent for longer is not counted. */
    private readonly liveWithinMs = DEFAULT_LEASE_TTL_MS,
  ) {
    // Read in the background too, so that an outage before the first health request still has
    // counts to report. The pool's end (the service's shutdown) ends the refreshing.
    this.refreshInBackground();
    this.timer = setInterval(() => {
      if (this.pool.state().state === 'ACTIVE') this.refreshInBackground();
      else clearInterval(this.timer);
    }, liveWithinMs / 3);
    this.timer.unref();
  }

  /** `projectId`: the project whose running pipelines are counted; null for every project. */
  async report(projectId: string | null) {
    const { error, counts } = await this.refresh(projectId);
    const store: Check = {
      name: 'store',
      status: error ? 'failing' : 'ok',
      // A newer refresh may have succeeded meanwhile and cleared the time; this answer still failed.
      erroring_since: error ? (this.storeFailingSince ?? new Date().toISOString()) : null,
      message: error ? `metadata store unreachable: ${error.message.split('\n')[0]}` : null,
    };
    return {
      status: store.status === 'ok' ? 'ok' : 'unavailable',
      version: VERSION,
      // This call's own reading when it has one: a background refresh may have applied later.
      workers: counts?.workers ?? this.workers,
      pipelines_running: counts?.running ?? this.pipelinesRunning.get(projectId) ?? 0,
      checks: [store],
    };
  }

  // A connect can outlast the period while the store is down: one background attempt at a time.
  private refreshInBackground(): void {
    if (this.backgroundBusy) return;
    this.backgroundBusy = true;
    void this.refresh(null).then(() => {
      this.backgroundBusy = false;
    });
  }

  /** Reads the counts; on failure keeps the last ones and returns the error. */
  private async refresh(
    projectId: string | null,
  ): Promise<{ error: Error | null; counts?: { workers: number; running: number } }> {
    const seq = ++this.refreshesStarted;
    const isLatest = () => {
      if (seq < this.latestApplied) return false;
      this.latestApplied = seq;
      return true;
    };
    try {
      const [workers, running] = await this.pool.transaction(async (db) => {
        await db.query(sql.unsafe`SET LOCAL statement_timeout = 2000`);
        return [
          await workersStore.countLive(db, this.liveWithinMs),
          await pipelinesStore.countInState(db, 'running', projectId),
        ];
      });
      if (isLatest()) {
        this.workers = workers;
        this.pipelinesRunning.set(projectId, running);
        this.storeFailingSince = null;
      }
      return { error: null, counts: { workers, running } };
    } catch (error) {
      if (isLatest()) this.storeFailingSince ??= new Date().toISOString();
      return { error: error as Error };
    }
  }
}

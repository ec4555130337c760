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

/** Answers GET /v1/health: the store check plus fleet-wide counts. */
export class HealthService {
  private storeFailingSince: string | null = null;
  // Last known counts, reported while the store cannot be asked.
  private workers = 0;
  private pipelinesRunning = 0;
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

  async report() {
    const error = await this.refresh();
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
      workers: this.workers,
      pipelines_running: this.pipelinesRunning,
      checks: [store],
    };
  }

  // A connect can outlast the period while the store is down: one background attempt at a time.
  private refreshInBackground(): void {
    if (this.backgroundBusy) return;
    this.backgroundBusy = true;
    void this.refresh().then(() => {
      this.backgroundBusy = false;
    });
  }

  /** Reads the counts; on failure keeps the last ones and returns the error. */
  private async refresh(): Promise<Error | null> {
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
          await pipelinesStore.countInState(db, 'running'),
        ];
      });
      if (isLatest()) {
        this.workers = workers;
        this.pipelinesRunning = running;
        this.storeFailingSince = null;
      }
      return null;
    } catch (error) {
      if (isLatest()) this.storeFailingSince ??= new Date().toISOString();
      return error as Error;
    }
  }
}

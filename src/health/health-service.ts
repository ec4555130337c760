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

  constructor(
    private readonly pool: DatabasePool,
    /** A worker silent for longer is not counted. */
    private readonly liveWithinMs = DEFAULT_LEASE_TTL_MS,
  ) {}

  async report() {
    const store: Check = { name: 'store', status: 'ok', erroring_since: null, message: null };
    try {
      await this.pool.transaction(async (db) => {
        await db.query(sql.unsafe`SET LOCAL statement_timeout = 2000`);
        this.workers = await workersStore.countLive(db, this.liveWithinMs);
        this.pipelinesRunning = await pipelinesStore.countInState(db, 'running');
      });
      this.storeFailingSince = null;
    } catch (error) {
      this.storeFailingSince ??= new Date().toISOString();
      store.status = 'failing';
      store.erroring_since = this.storeFailingSince;
      store.message = `metadata store unreachable: ${(error as Error).message.split('\n')[0]}`;
    }
    return {
      status: store.status === 'ok' ? 'ok' : 'unavailable',
      version: VERSION,
      workers: this.workers,
      pipelines_running: this.pipelinesRunning,
      checks: [store],
    };
  }
}

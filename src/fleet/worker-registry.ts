import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DatabasePool } from 'slonik';
import type { Logger } from '../log/logger.js';
import { workersStore } from '../store/workers-store.js';
import { VERSION } from '../version.js';

/** How often a worker proves it is alive. */
export const HEARTBEAT_INTERVAL_MS = 5_000;
/** A worker silent for this long is no longer counted as live. */
export const WORKER_STALE_AFTER_MS = 15_000;

/** This process as a member of the worker fleet: registered in the store and heartbeating. */
export class WorkerRegistry {
  readonly id = randomUUID();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: DatabasePool,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    await workersStore.register(this.pool, {
      id: this.id,
      hostname: hostname(),
      pid: process.pid,
      version: VERSION,
    });
    this.timer = setInterval(() => {
      workersStore.heartbeat(this.pool, this.id).catch((error: unknown) => {
        this.logger.warn({ err: error }, 'worker heartbeat failed');
      });
    }, HEARTBEAT_INTERVAL_MS);
    this.timer.unref();
    this.logger.info({ worker: this.id }, 'registered as worker');
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await workersStore.markStopped(this.pool, this.id).catch(() => undefined);
  }
}

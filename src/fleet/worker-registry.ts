import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DatabasePool } from 'slonik';
import type { Logger } from '../log/logger.js';
import { workersStore } from '../store/workers-store.js';
import { VERSION } from '../version.js';

/** How long a worker (and its leases) stay live without a heartbeat, unless configured. */
export const DEFAULT_LEASE_TTL_MS = 15_000;
/** Workers gone for this long are removed from the list. */
export const FORGET_WORKERS_AFTER_MS = 10 * 60_000;

/** This process as a member of the worker fleet: registered in the store and heartbeating. */
export class WorkerRegistry {
  readonly id = randomUUID();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: DatabasePool,
    private readonly logger: Logger,
    /** Heartbeats come three times per lease lifetime, so one late beat loses nothing. */
    private readonly leaseTtlMs = DEFAULT_LEASE_TTL_MS,
  ) {}

  async start(): Promise<void> {
    await workersStore.register(this.pool, {
      id: this.id,
      hostname: hostname(),
      pid: process.pid,
      version: VERSION,
    });
    this.timer = setInterval(() => {
      Promise.all([
        workersStore.heartbeat(this.pool, this.id),
        workersStore.forgetGone(this.pool, FORGET_WORKERS_AFTER_MS),
      ]).catch((error: unknown) => {
        this.logger.warn({ err: error }, 'worker heartbeat failed');
      });
    }, this.leaseTtlMs / 3);
    this.timer.unref();
    this.logger.info({ worker: this.id }, 'registered as worker');
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await workersStore.markStopped(this.pool, this.id).catch(() => undefined);
  }
}

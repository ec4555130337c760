import type { DatabasePool } from 'slonik';
import type { Logger } from '../log/logger.js';
import type { Supervisor } from '../runtime/supervisor.js';
import { leasesStore } from '../store/leases-store.js';
import { workersStore } from '../store/workers-store.js';

/**
 * This worker's part in the fleet, once per tick: renew its leases (and let go of any it lost),
 * carry out actions other instances left for its pipelines, follow definition changes, and take
 * pipelines that should run and have no live owner, up to its fair share: the pipelines wanted,
 * divided by the live workers, rounded up. Running pipelines are not moved to rebalance.
 */
export class FleetReconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: DatabasePool,
    private readonly supervisor: Supervisor,
    private readonly logger: Logger,
    private readonly tickMs: number,
  ) {}

  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.tick());
    }, this.tickMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async tick(): Promise<void> {
    const { workerId, leaseTtlMs } = this.supervisor.fleet;
    try {
      const held = new Set(await leasesStore.renew(this.pool, workerId, leaseTtlMs));
      this.supervisor.drop(this.supervisor.ownedIds().filter((id) => !held.has(id)));
      for (const { id, action } of await leasesStore.takeActions(this.pool, workerId)) {
        this.supervisor.deliver(id, action);
      }
      await this.supervisor.reconcile();
      await this.claim();
    } catch (error) {
      this.logger.warn({ err: error }, 'fleet tick failed');
    }
  }

  private async claim(): Promise<void> {
    const { workerId, leaseTtlMs } = this.supervisor.fleet;
    const { wanted, mine } = await leasesStore.load(this.pool, workerId);
    const live = Math.max(1, await workersStore.countLive(this.pool, leaseTtlMs));
    const share = Math.ceil(wanted / live);
    if (mine >= share) return;
    for (const id of await leasesStore.claimable(this.pool, share - mine)) {
      await this.supervisor.takeOver(id);
    }
  }
}

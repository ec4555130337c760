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
 *
 * A source stream and its pipelines are leased to one instance: the pipelines of one source
 * connection that share its slot (`source.slot: "shared"`) read one walsender, which one process at
 * a time can stream (a second reader of a slot ends the first), so they run on one worker and move
 * together. A worker claims none of them while another holds a live lease on one; a worker that
 * claims one claims the stream's other claimable pipelines in the same tick, even past its fair
 * share (a stream moves as a whole); and a worker that holds one takes the stream's other claimable
 * pipelines first, whatever its share, so a pipeline of the stream that starts or comes back joins
 * the instance that streams it. When an instance dies its streams are taken over whole, each by one
 * worker; fencing epochs stay per pipeline, bumped at each claim. A pipeline with
 * `source.slot: "own"` is leased alone.
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

  /**
   * Takes pipelines without a live owner: first the claimable ones of the source streams this
   * worker holds, whatever its share; then others, oldest first, up to its share, each stream
   * claimed with all its claimable pipelines.
   */
  private async claim(): Promise<void> {
    const { workerId, leaseTtlMs } = this.supervisor.fleet;
    const taken = new Set(await this.joinHeldStreams(workerId));
    const { wanted, mine } = await leasesStore.load(this.pool, workerId);
    const live = Math.max(1, await workersStore.countLive(this.pool, leaseTtlMs));
    const share = Math.ceil(wanted / live);
    let holding = mine;
    if (holding >= share) return;
    for (const { id, shared } of await leasesStore.claimable(this.pool, workerId, share - holding)) {
      if (holding >= share) break;
      // Taken already with its stream.
      if (taken.has(id) || !(await this.supervisor.takeOver(id))) continue;
      taken.add(id);
      holding += 1;
      if (!shared) continue;
      for (const other of await this.joinHeldStreams(workerId)) {
        if (!taken.has(other)) holding += 1;
        taken.add(other);
      }
    }
  }

  /** Takes the claimable pipelines of the source streams this worker holds; returns those it took. */
  private async joinHeldStreams(workerId: string): Promise<string[]> {
    const joined: string[] = [];
    for (const id of await leasesStore.claimableOfHeldStreams(this.pool, workerId)) {
      if (await this.supervisor.takeOver(id)) joined.push(id);
    }
    return joined;
  }
}

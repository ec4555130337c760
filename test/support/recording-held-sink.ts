import type { ChangeEvent } from '../../src/core/change.js';
import type { HeldTransaction } from '../../src/core/held-transaction.js';
import { formatLsn } from '../../src/core/lsn.js';
import type { ChangeBatch } from '../../src/core/sink.js';
import { RecordingSink } from './recording-sink.js';

const shown = (changes: readonly ChangeEvent[]) => changes.map((c) => c.after?.id ?? c.op).join(',');

/**
 * A recording sink that can hold a transaction open: every step of its batches and held
 * transactions goes, in order, into one log, and the changes a held transaction kept (its
 * savepoints undone) are what its commit records.
 */
export class RecordingHeldSink extends RecordingSink {
  /** Batches (`batch <lsn> <ids>`) and held steps (`open`, `apply <ids>`, …), in the order they ran. */
  readonly log: string[] = [];
  /** The changes of each committed held transaction, with the checkpoint it stored. */
  readonly committed: { lsn: string; ids: string[] }[] = [];
  private failHeld: { error: unknown } | null = null;

  /** The next step of a held transaction (its opening included) fails with `error`. */
  failNextHeldStep(error: unknown): void {
    this.failHeld = { error };
  }

  override async applyBatch(batch: ChangeBatch): Promise<void> {
    await super.applyBatch(batch);
    this.log.push(`batch ${formatLsn(batch.commitLsn)} ${shown(batch.changes)}`);
    this.steps.check();
  }

  async openHeldTransaction(): Promise<HeldTransaction> {
    this.step('open');
    // The changes kept so far, each subtransaction's mark as an index into them.
    const kept: ChangeEvent[] = [];
    const marks = new Map<number, number>();
    return {
      apply: async (changes) => {
        this.step(`apply ${shown(changes)}`);
        kept.push(...changes);
      },
      savepoint: async (subxid) => {
        this.step(`savepoint ${subxid}`);
        marks.set(subxid, kept.length);
      },
      rollbackTo: async (subxid) => {
        this.step(`rollback ${subxid}`);
        const at = marks.get(subxid);
        if (at !== undefined) kept.length = at;
      },
      commit: async (batch) => {
        this.step(`commit ${formatLsn(batch.commitLsn)}`);
        this.committed.push({
          lsn: formatLsn(batch.commitLsn),
          ids: kept.map((c) => c.after?.id ?? c.op) as string[],
        });
        this.steps.check();
      },
      abort: async () => {
        this.log.push('abort');
        this.steps.check();
      },
    };
  }

  private step(what: string): void {
    const failure = this.failHeld;
    this.failHeld = null;
    if (failure) {
      this.log.push(`${what} failed`);
      this.steps.check();
      throw failure.error;
    }
    this.log.push(what);
    this.steps.check();
  }
}

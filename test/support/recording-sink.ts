import type { Checkpoint, TableSchema } from '../../src/core/change.js';
import type { ChangeBatch, Sink, SnapshotPartition } from '../../src/core/sink.js';

/** Waits for conditions on state that changes in steps: whoever makes a step calls `check()`. */
export class Conditions {
  private readonly waiting = new Set<() => void>();

  /** Resolves once `holds` is true, checked now and after every step. */
  until(holds: () => boolean): Promise<void> {
    if (holds()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!holds()) return;
        this.waiting.delete(check);
        resolve();
      };
      this.waiting.add(check);
    });
  }

  check(): void {
    for (const check of [...this.waiting]) check();
  }
}

/**
 * A sink in memory for the applier's tests: it keeps every batch it is handed and the checkpoint
 * of the last durable one; its writes can be held open until released, or made to fail.
 */
export class RecordingSink implements Sink {
  /** Every batch handed to applyBatch, in order, as the call began. */
  readonly batches: ChangeBatch[] = [];
  /** The batches whose write resolved, in order. */
  readonly durable: ChangeBatch[] = [];
  /** Told of every write that begins or ends. */
  readonly steps = new Conditions();
  private held: { promise: Promise<void>; release: () => void } | null = null;
  private failure: { error: unknown } | null = null;

  /** Holds every write from now on open until release(). */
  hold(): void {
    let release: () => void = () => undefined;
    const promise = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.held = { promise, release };
  }

  /** Lets the held writes end. */
  release(): void {
    this.held?.release();
    this.held = null;
  }

  /** The next write fails with `error` (once released, when held). */
  failNext(error: unknown): void {
    this.failure = { error };
  }

  /** Resolves once `count` writes began. */
  began(count: number): Promise<void> {
    return this.steps.until(() => this.batches.length >= count);
  }

  /** The changes of every write that began, one list per write, as `table:id` texts. */
  written(): string[][] {
    return this.batches.map((batch) => batch.changes.map((c) => `${c.table.table}:${c.after?.id ?? c.op}`));
  }

  async applyBatch(batch: ChangeBatch): Promise<void> {
    this.batches.push(batch);
    const failure = this.failure;
    this.failure = null;
    this.steps.check();
    if (this.held) await this.held.promise;
    if (failure) throw failure.error;
    this.durable.push(batch);
    this.steps.check();
  }

  async readCheckpoint(): Promise<Checkpoint | null> {
    const last = this.durable.at(-1);
    return last ? { lsn: last.commitLsn, epoch: last.epoch } : null;
  }

  async open(_tables: TableSchema[]): Promise<void> {}
  async snapshotPartitionsDone(): Promise<SnapshotPartition[]> {
    return [];
  }
  async resetTable(): Promise<void> {}
  async writeSnapshotPartition(): Promise<number> {
    throw new Error('the recording sink takes batches only');
  }
  async finishSnapshot(): Promise<void> {}
  planSchemaChange(): string[] {
    return [];
  }
  async applySchemaChange(): Promise<{ skipped: string[] }> {
    return { skipped: [] };
  }
  async close(): Promise<void> {}
}

import { createReadStream, createWriteStream, mkdtempSync, rmSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { ChangeEvent } from '../../core/change.js';

// A change's position is a bigint, which JSON has no form for: the file keeps its decimal text.
const lsnAsText = (key: string, value: unknown) => (key === 'commitLsn' ? String(value) : value);
const lsnFromText = (key: string, value: unknown) => (key === 'commitLsn' ? BigInt(value as string) : value);

/** Changes kept in memory before the rest go to a file. */
const MEMORY_LIMIT = 10_000;

/**
 * Changes of a table being backfilled, held in arrival order until its copy is done. The first
 * ones stay in memory; beyond that they are appended to a temporary file, so a long backfill
 * under heavy writes does not grow the process.
 */
export class HeldChanges {
  private memory: ChangeEvent[] = [];
  private dir: string | undefined;
  private file: WriteStream | undefined;
  private spilled = 0;
  /** Why the file could not be written (a full disk), told to the next caller rather than the process. */
  private writeError: Error | undefined;

  get size(): number {
    return this.memory.length + this.spilled;
  }

  add(change: ChangeEvent): void {
    if (this.spilled === 0 && this.memory.length < MEMORY_LIMIT) {
      this.memory.push(change);
      return;
    }
    if (!this.file) {
      this.dir = mkdtempSync(join(tmpdir(), 'replicator-held-'));
      this.file = createWriteStream(join(this.dir, 'changes.jsonl'));
      this.file.on('error', (error) => {
        this.writeError ??= error;
      });
    }
    if (this.writeError) throw this.writeError;
    this.file.write(`${JSON.stringify(change, lsnAsText)}\n`);
    this.spilled++;
  }

  /** Yields the held changes `keep` accepts, in order and in chunks, then forgets them all. */
  async *drain(chunkSize: number, keep: (change: ChangeEvent) => boolean): AsyncGenerator<ChangeEvent[]> {
    const kept = this.memory.filter(keep);
    for (let i = 0; i < kept.length; i += chunkSize) yield kept.slice(i, i + chunkSize);
    this.memory = [];
    if (this.file && this.dir) {
      const path = join(this.dir, 'changes.jsonl');
      if (this.writeError) throw this.writeError;
      await new Promise<void>((resolve, reject) =>
        this.file?.end((error?: Error | null) => (error ? reject(error) : resolve())),
      );
      let chunk: ChangeEvent[] = [];
      for await (const line of createInterface({ input: createReadStream(path) })) {
        const change = JSON.parse(line, lsnFromText) as ChangeEvent;
        if (keep(change)) chunk.push(change);
        if (chunk.length >= chunkSize) {
          yield chunk;
          chunk = [];
        }
      }
      if (chunk.length > 0) yield chunk;
    }
    this.discard();
  }

  discard(): void {
    this.file?.destroy();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.file = undefined;
    this.dir = undefined;
    this.memory = [];
    this.spilled = 0;
    this.writeError = undefined;
  }
}

import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { PgoutputMessage } from './pgoutput-decoder.js';

/** The messages of a transaction that are kept until its commit. */
export type SpooledMessage = Extract<
  PgoutputMessage,
  { tag: 'relation' | 'insert' | 'update' | 'delete' | 'truncate' }
>;

/** One spooled message with the LSN it was sent at and the (sub)transaction it belongs to. */
export interface SpoolEntry {
  lsn: string;
  /** Xid of the subtransaction that made the change (the top-level xid when not in a subtransaction). */
  xid: number;
  message: SpooledMessage;
}

/** A directory of spool files, removed as a whole. */
export class SpoolDirectory {
  private dir: Promise<string> | undefined;
  private counter = 0;

  /** @param parent where to create the directory; the OS temp directory by default */
  constructor(private readonly parent: string = tmpdir()) {}

  /** A new file path inside the directory, created on first use. */
  async newFile(label: string): Promise<string> {
    this.dir ??= mkdtemp(join(this.parent, 'replicator-spool-'));
    return join(await this.dir, `${label}-${++this.counter}.ndjson`);
  }

  /** Removes the directory and every file in it. */
  async remove(): Promise<void> {
    const dir = this.dir;
    this.dir = undefined;
    if (dir) await rm(await dir, { recursive: true, force: true });
  }
}

const WRITE_CHUNK = 256 * 1024;
const READ_CHUNK = 256 * 1024;
const ENTRY_OVERHEAD = 100;

function estimateSize(message: SpooledMessage): number {
  let size = ENTRY_OVERHEAD;
  const add = (values: { kind: string; value?: unknown }[] | undefined) => {
    for (const v of values ?? []) size += 16 + (typeof v.value === 'string' ? v.value.length : 0);
  };
  if ('values' in message) add(message.values);
  if ('old' in message) add(message.old?.values);
  return size;
}

// Reads a chunk at a time, so memory stays bounded however slowly the lines are consumed.
async function* readLines(path: string): AsyncGenerator<string> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(READ_CHUNK);
    const decoder = new StringDecoder('utf8');
    let rest = '';
    let position = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const lines = (rest + decoder.write(buffer.subarray(0, bytesRead))).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) if (line !== '') yield line;
    }
    rest += decoder.end();
    if (rest !== '') yield rest;
  } finally {
    await handle.close();
  }
}

/**
 * The changes of one transaction until it commits: in memory up to `memoryLimitBytes`, then in
 * a newline-delimited JSON file. Subtransactions aborted meanwhile are remembered and their
 * changes skipped on replay.
 */
export class TransactionSpool {
  private memory: SpoolEntry[] = [];
  private memoryBytes = 0;
  private file: { path: string; handle: FileHandle } | undefined;
  private pending: string[] = [];
  private pendingBytes = 0;
  private readonly aborted = new Set<number>();
  private count = 0;

  constructor(
    private readonly directory: SpoolDirectory,
    private readonly label: string,
    private readonly memoryLimitBytes: number,
  ) {}

  /** Entries appended so far (aborted subtransactions included). */
  get size(): number {
    return this.count;
  }

  /** Whether the spool went to disk. */
  get spilled(): boolean {
    return this.file !== undefined;
  }

  /** Adds an entry at the end. */
  async append(entry: SpoolEntry): Promise<void> {
    this.count++;
    if (!this.file) {
      this.memory.push(entry);
      this.memoryBytes += estimateSize(entry.message);
      if (this.memoryBytes <= this.memoryLimitBytes) return;
      const path = await this.directory.newFile(this.label);
      this.file = { path, handle: await open(path, 'w') };
      const spilled = this.memory;
      this.memory = [];
      this.memoryBytes = 0;
      for (const e of spilled) await this.write(e);
      return;
    }
    await this.write(entry);
  }

  private async write(entry: SpoolEntry): Promise<void> {
    const line = `${JSON.stringify(entry)}\n`;
    this.pending.push(line);
    this.pendingBytes += line.length;
    if (this.pendingBytes >= WRITE_CHUNK) await this.flush();
  }

  private async flush(): Promise<void> {
    if (!this.file || this.pending.length === 0) return;
    const chunk = this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    await this.file.handle.write(chunk);
  }

  /** Discards the changes of subtransaction `subxid` (on replay). */
  abortSubtransaction(subxid: number): void {
    this.aborted.add(subxid);
  }

  /** The entries in append order, without those of aborted subtransactions. */
  async *replay(): AsyncGenerator<SpoolEntry> {
    if (!this.file) {
      for (const entry of this.memory) if (!this.aborted.has(entry.xid)) yield entry;
      return;
    }
    await this.flush();
    for await (const line of readLines(this.file.path)) {
      const entry = JSON.parse(line) as SpoolEntry;
      if (!this.aborted.has(entry.xid)) yield entry;
    }
  }

  /** Frees the memory and deletes the file. Safe to call twice. */
  async dispose(): Promise<void> {
    this.memory = [];
    this.pending = [];
    const file = this.file;
    this.file = undefined;
    if (file) {
      await file.handle.close().catch(() => {});
      await rm(file.path, { force: true });
    }
  }
}

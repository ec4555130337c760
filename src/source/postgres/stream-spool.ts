import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpoolWriteError } from './spool-write-error.js';

/** A directory of spool files, made on first use and removed as a whole. */
export class SpoolDirectory {
  private dir: string | undefined;
  private counter = 0;

  /** @param parent where to create the directory; the OS temp directory by default */
  constructor(readonly parent: string = tmpdir()) {}

  /** A new file path inside the directory. */
  newFile(label: string): string {
    if (!this.dir) {
      mkdirSync(this.parent, { recursive: true, mode: 0o700 });
      this.dir = mkdtempSync(join(this.parent, 'replicator-spool-'));
    }
    return join(this.dir, `${label}-${++this.counter}.bin`);
  }

  /** Removes the directory and every file in it; never throws (what is left is removed at the next start). */
  remove(): void {
    const dir = this.dir;
    this.dir = undefined;
    if (dir) quietly(() => rmSync(dir, { recursive: true, force: true }));
  }
}

const BLOCK = 1 << 20;
const FRAME_HEADER = 4;

/**
 * The raw pgoutput messages of one streamed (in-progress) transaction until its Stream Commit:
 * length-prefixed frames in 1 MiB blocks, in memory up to `memoryLimitBytes`, then appended to a
 * file. The bytes are kept as the server sent them and decoded once, on replay, so that spooling
 * costs a copy. Local temporary files in large blocks: written and read synchronously, which
 * costs less than a promise per block and keeps the replay a plain loop.
 */
export class StreamSpool {
  private blocks: Buffer[] = [];
  private block = Buffer.allocUnsafe(BLOCK);
  private used = 0;
  private memoryBytes = 0;
  private file: { path: string; fd: number } | undefined;
  private readonly aborted = new Set<number>();
  private count = 0;

  /** @param write how bytes reach the file: fs.writeSync, or a failing one in tests */
  constructor(
    private readonly directory: SpoolDirectory,
    private readonly label: string,
    private readonly memoryLimitBytes: number,
    private readonly write: typeof writeSync = writeSync,
  ) {}

  /** Messages appended so far (aborted subtransactions included). */
  get size(): number {
    return this.count;
  }

  /** Whether the spool went to disk. */
  get spilled(): boolean {
    return this.file !== undefined;
  }

  /** Adds a copy of one message (a data or Relation message, with its xid prefix), from `start` to `end`. */
  append(message: Buffer, start = 0, end = message.length): void {
    this.count++;
    const length = end - start;
    const need = FRAME_HEADER + length;
    if (this.used + need > this.block.length) this.sealBlock(need);
    this.block.writeUInt32BE(length, this.used);
    message.copy(this.block, this.used + FRAME_HEADER, start, end);
    this.used += need;
  }

  /** Discards the changes of subtransaction `subxid` (on replay). */
  abortSubtransaction(subxid: number): void {
    this.aborted.add(subxid);
  }

  /**
   * The messages in append order, without those of aborted subtransactions. Each is a view that
   * is only valid until the next one is taken. With `decode`, each message is passed through it
   * as it is reached and its result is yielded instead.
   */
  messages(): Generator<Buffer, void, undefined>;
  messages<T>(decode: (message: Buffer) => T): Generator<T, void, undefined>;
  *messages<T>(decode?: (message: Buffer) => T): Generator<T | Buffer, void, undefined> {
    const keep = (message: Buffer) => !this.aborted.has(message.readUInt32BE(1));
    const take = decode ?? ((message: Buffer) => message);
    if (!this.file) {
      for (const block of [...this.blocks, this.block.subarray(0, this.used)]) {
        for (const message of framesOf(block)) if (keep(message)) yield take(message);
      }
      return;
    }
    this.spilling(() => this.writeOut(this.block.subarray(0, this.used)));
    this.used = 0;
    const fd = openSync(this.file.path, 'r');
    try {
      let buffer = Buffer.allocUnsafe(BLOCK);
      let filled = 0;
      for (;;) {
        const read = readSync(fd, buffer, filled, buffer.length - filled, null);
        filled += read;
        let at = 0;
        while (at + FRAME_HEADER <= filled) {
          const length = buffer.readUInt32BE(at);
          if (at + FRAME_HEADER + length > filled) break;
          const message = buffer.subarray(at + FRAME_HEADER, at + FRAME_HEADER + length);
          at += FRAME_HEADER + length;
          if (keep(message)) yield take(message);
        }
        if (read === 0) {
          if (at !== filled) throw new Error(`spool file ${this.file.path} ends inside a message`);
          return;
        }
        // The partial frame moves to the front; a frame larger than the buffer gets a larger one.
        const rest = filled - at;
        const needed = rest >= FRAME_HEADER ? FRAME_HEADER + buffer.readUInt32BE(at) : BLOCK;
        const next = needed > buffer.length ? Buffer.allocUnsafe(needed) : buffer;
        buffer.copy(next, 0, at, filled);
        buffer = next;
        filled = rest;
      }
    } finally {
      closeSync(fd);
    }
  }

  /** Frees the memory and deletes the file. Safe to call twice; never throws (a failing disk is cleaned up at the next start). */
  dispose(): void {
    this.blocks = [];
    this.used = 0;
    const file = this.file;
    this.file = undefined;
    if (file) {
      quietly(() => closeSync(file.fd));
      quietly(() => rmSync(file.path, { force: true }));
    }
  }

  /** Closes the current block (keeping or writing it) and starts one with room for `need` bytes. */
  private sealBlock(need: number): void {
    const sealed = this.block.subarray(0, this.used);
    this.memoryBytes += sealed.length;
    if (this.file || this.memoryBytes > this.memoryLimitBytes) {
      this.spilling(() => {
        if (!this.file) {
          const path = this.directory.newFile(this.label);
          // Owner-only: the file holds rows of the source.
          this.file = { path, fd: openSync(path, 'w', 0o600) };
          for (const block of this.blocks) this.writeOut(block);
          this.blocks = [];
        }
        this.writeOut(sealed);
      });
      this.used = 0;
      // Written out whole: the block is free again, and a new 1 MiB one per block would be
      // memory outside the heap for the collector to chase.
      if (this.block.length === BLOCK && need <= BLOCK) return;
    } else {
      this.blocks.push(sealed);
    }
    this.block = Buffer.allocUnsafe(Math.max(BLOCK, need));
    this.used = 0;
  }

  private writeOut(bytes: Buffer): void {
    const fd = (this.file as { fd: number }).fd;
    let written = 0;
    while (written < bytes.length) written += this.write(fd, bytes, written, bytes.length - written);
  }

  /** Runs a write to the file; a failure names the directory and the transaction's size. */
  private spilling(write: () => void): void {
    try {
      write();
    } catch (error) {
      throw new SpoolWriteError(this.directory.parent, this.count, error);
    }
  }
}

function quietly(step: () => void): void {
  try {
    step();
  } catch {
    // Left for the next start's clean-up of the spool directory.
  }
}

function* framesOf(block: Buffer): Generator<Buffer> {
  let at = 0;
  while (at < block.length) {
    const length = block.readUInt32BE(at);
    yield block.subarray(at + FRAME_HEADER, at + FRAME_HEADER + length);
    at += FRAME_HEADER + length;
  }
}

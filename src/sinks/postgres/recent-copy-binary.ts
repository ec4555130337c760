import type { Readable } from 'node:stream';
import type { TableSchema } from '../../core/change.js';
import { CopyBinaryMessages, headerBytes, messageAt, tupleFields } from '../../core/copy-binary.js';
import { binaryKeyText } from './binary-copy-types.js';
import { RECENT_BYTES, type RecentCopyRows } from './refused-copy-line.js';

interface KeptChunk {
  chunk: Buffer;
  /** The index (from 0) of its first CopyData message in the stream. */
  firstMessage: number;
}

/**
 * Keeps the last RECENT_BYTES (and some) of a binary COPY in CopyData messages, to find a tuple by
 * number: the server numbers binary tuples as it numbers text lines, and tuple n is message n - 1
 * (the first message also holds the header). Each chunk is whole messages, so a kept chunk is read
 * from its start.
 */
export class RecentCopyBinary implements RecentCopyRows {
  private readonly messages = new CopyBinaryMessages();
  private chunks: KeptChunk[] = [];
  private bytes = 0;
  // A stream that is not whole messages is not kept: the counter before the sink fails it anyway.
  private unreadable = false;

  watch(copy: Readable): this {
    copy.on('data', (chunk: Buffer) => this.add(chunk));
    return this;
  }

  add(chunk: Buffer): void {
    if (this.unreadable) return;
    const firstMessage = this.messages.messages;
    try {
      this.messages.feed(chunk);
    } catch {
      this.unreadable = true;
      this.chunks = [];
      return;
    }
    this.chunks.push({ chunk, firstMessage });
    this.bytes += chunk.length;
    while (
      this.chunks.length > 1 &&
      this.bytes - (this.chunks[0] as KeptChunk).chunk.length >= RECENT_BYTES
    ) {
      this.bytes -= (this.chunks.shift() as KeptChunk).chunk.length;
    }
  }

  /** The fields of tuple `n` (from 1), or undefined when it is not kept. */
  tuple(n: number): (Buffer | null)[] | undefined {
    const index = n - 1;
    const kept = this.chunks.findLast((c) => c.firstMessage <= index);
    if (!kept || index >= this.messages.messages) return undefined;
    let message = messageAt(kept.chunk, 0);
    for (let i = kept.firstMessage; i < index; i++) {
      if (message.end >= kept.chunk.length) return undefined;
      message = messageAt(kept.chunk, message.end);
    }
    const { chunk } = kept;
    const from =
      index === 0 ? message.payload + headerBytes(chunk, message.payload, message.end) : message.payload;
    return tupleFields(chunk, from, message.end);
  }

  keyOf(table: TableSchema, n: number): Record<string, string | null> | undefined {
    const fields = this.tuple(n);
    if (!fields || fields.length !== table.columns.length) return undefined;
    const key: Record<string, string | null> = {};
    for (const name of table.keyColumns) {
      const at = table.columns.findIndex((c) => c.name === name);
      const value = fields[at];
      if (value === null) {
        key[name] = null;
        continue;
      }
      const text =
        value === undefined
          ? undefined
          : binaryKeyText((table.columns[at] as { typeOid: number }).typeOid, value);
      if (text === undefined) return undefined;
      key[name] = text;
    }
    return key;
  }
}

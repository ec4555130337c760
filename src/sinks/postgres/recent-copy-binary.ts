import type { Readable } from 'node:stream';
import type { TableSchema } from '../../core/change.js';
import { CopyBinaryScanner } from '../../core/copy-binary.js';
import { binaryKeyText } from './binary-copy-types.js';
import { RECENT_BYTES, type RecentCopyRows } from './refused-copy-line.js';

interface KeptChunk {
  chunk: Buffer;
  /** Its first byte's position in the stream. */
  position: number;
}

/**
 * Keeps the last RECENT_BYTES (and some) of a binary COPY, to find a tuple by number: the server
 * numbers binary tuples as it numbers text lines. A binary stream cannot be read from the middle,
 * so the first tuple starting in each kept chunk is noted, and a tuple is found by walking from
 * the nearest one before it.
 */
export class RecentCopyBinary implements RecentCopyRows {
  private readonly scanner = new CopyBinaryScanner();
  private chunks: KeptChunk[] = [];
  private bytes = 0;
  private starts: { index: number; position: number }[] = [];
  // A stream the scanner cannot follow is not kept: the counter before the sink fails it anyway.
  private unreadable = false;

  watch(copy: Readable): this {
    copy.on('data', (chunk: Buffer) => this.add(chunk));
    return this;
  }

  add(chunk: Buffer): void {
    if (this.unreadable) return;
    const position = this.scanner.position;
    try {
      this.scanner.feed(chunk);
      if (this.scanner.firstStart) this.starts.push(this.scanner.firstStart);
    } catch {
      this.unreadable = true;
      this.chunks = [];
      return;
    }
    this.chunks.push({ chunk, position });
    this.bytes += chunk.length;
    while (
      this.chunks.length > 1 &&
      this.bytes - (this.chunks[0] as KeptChunk).chunk.length >= RECENT_BYTES
    ) {
      this.bytes -= (this.chunks.shift() as KeptChunk).chunk.length;
    }
    const from = (this.chunks[0] as KeptChunk).position;
    while (this.starts.length > 0 && (this.starts[0] as { position: number }).position < from)
      this.starts.shift();
  }

  /** The fields of tuple `n` (from 1), or undefined when it is not kept whole. */
  tuple(n: number): (Buffer | null)[] | undefined {
    const index = n - 1;
    let start: { index: number; position: number } | undefined;
    for (const s of this.starts) {
      if (s.index > index) break;
      start = s;
    }
    const first = this.chunks[0];
    if (!start || !first) return undefined;
    const kept = Buffer.concat(this.chunks.map((c) => c.chunk));
    let at = start.position - first.position;
    for (let i = start.index; ; i++) {
      if (at + 2 > kept.length) return undefined;
      const count = kept.readInt16BE(at);
      at += 2;
      if (count < 0) return undefined; // the trailer: no such tuple
      const fields: (Buffer | null)[] = [];
      for (let f = 0; f < count; f++) {
        if (at + 4 > kept.length) return undefined;
        const length = kept.readInt32BE(at);
        at += 4;
        if (length < 0) {
          fields.push(null);
          continue;
        }
        if (at + length > kept.length) return undefined;
        if (i === index) fields.push(kept.subarray(at, at + length));
        at += length;
      }
      if (i === index) return fields;
    }
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

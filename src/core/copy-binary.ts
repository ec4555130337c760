/**
 * A walker of PostgreSQL's binary COPY format, the format of a snapshot copied between two
 * PostgreSQL databases whose columns have the same types: an 11-byte signature, an int32 of flags
 * and an int32 length of a header extension (then that many bytes); then tuples, each an int16
 * count of fields and, per field, an int32 length (-1 for NULL) and that many bytes; then the
 * trailer, an int16 -1. Integers are big-endian.
 */

/** Which format a snapshot partition's COPY stream is in. */
export type CopyFormat = 'text' | 'binary';

export const COPY_BINARY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const HEADER_BYTES = COPY_BINARY_SIGNATURE.length + 8;
// Flag bit 16: every tuple carries its OID, which no COPY of a query does.
const FLAG_OIDS = 1 << 16;

/** A binary COPY stream that does not follow the format. */
export class CopyBinaryError extends Error {
  constructor(message: string) {
    super(`binary COPY: ${message}`);
    this.name = 'CopyBinaryError';
  }
}

enum Phase {
  Header,
  Extension,
  Count,
  Length,
  Field,
  Ended,
}

/**
 * Follows a binary COPY stream fed in chunks cut anywhere, counting whole tuples and telling where
 * each starts (its byte position from the stream's start). Field bytes are skipped, not copied.
 */
export class CopyBinaryScanner {
  /** Tuples read whole so far. */
  tuples = 0;
  /** Bytes fed so far. */
  position = 0;
  private phase = Phase.Header;
  // A fixed-size part (header, count, length) cut by a chunk's end is gathered here.
  private readonly partial = Buffer.alloc(HEADER_BYTES);
  private have = 0;
  private skip = 0;
  private fieldsLeft = 0;

  /** Whether the trailer was read: the stream is complete. */
  get ended(): boolean {
    return this.phase === Phase.Ended;
  }

  /**
   * The first tuple that began in the chunk last fed (its field count, that is): its index (from
   * 0) and its position; undefined when none began there.
   */
  firstStart: { index: number; position: number } | undefined;

  /** Reads the next chunk; returns the tuples it completed. */
  feed(chunk: Buffer): number {
    const before = this.tuples;
    this.firstStart = undefined;
    const end = chunk.length;
    let at = 0;
    while (at < end) {
      switch (this.phase) {
        case Phase.Extension:
        case Phase.Field: {
          const n = Math.min(this.skip, end - at);
          at += n;
          this.skip -= n;
          if (this.skip > 0) break;
          if (this.phase === Phase.Extension) this.phase = Phase.Count;
          else this.fieldDone();
          break;
        }
        case Phase.Header: {
          const header = this.gather(chunk, at, HEADER_BYTES);
          if (!header) {
            at = end;
            break;
          }
          at = this.consumedTo;
          const from = this.partAt;
          const signature = header.subarray(from, from + COPY_BINARY_SIGNATURE.length);
          if (!signature.equals(COPY_BINARY_SIGNATURE)) {
            throw new CopyBinaryError('the stream does not start with the binary COPY signature');
          }
          const flags = header.readUInt32BE(from + COPY_BINARY_SIGNATURE.length);
          if (flags & FLAG_OIDS) throw new CopyBinaryError('tuples with OIDs are not supported');
          this.skip = header.readUInt32BE(from + COPY_BINARY_SIGNATURE.length + 4);
          this.phase = this.skip > 0 ? Phase.Extension : Phase.Count;
          break;
        }
        case Phase.Count: {
          // Most tuples lie whole inside a chunk: walked in one tight loop, without the phases.
          if (this.have === 0) at = this.wholeTuples(chunk, at);
          if (at >= end) break;
          if (this.have === 0) this.started(at);
          const count = this.gather(chunk, at, 2);
          if (!count) {
            at = end;
            break;
          }
          at = this.consumedTo;
          const fields = count.readInt16BE(this.partAt);
          if (fields === -1) {
            this.phase = Phase.Ended;
          } else if (fields < 0) {
            throw new CopyBinaryError(`tuple ${this.tuples + 1} has a field count of ${fields}`);
          } else if (fields === 0) {
            this.tuples++;
          } else {
            this.fieldsLeft = fields;
            this.phase = Phase.Length;
          }
          break;
        }
        case Phase.Length: {
          const length = this.gather(chunk, at, 4);
          if (!length) {
            at = end;
            break;
          }
          at = this.consumedTo;
          const n = length.readInt32BE(this.partAt);
          if (n < -1) throw new CopyBinaryError(`tuple ${this.tuples + 1} has a field length of ${n}`);
          if (n <= 0) this.fieldDone();
          else {
            this.skip = n;
            this.phase = Phase.Field;
          }
          break;
        }
        case Phase.Ended:
          throw new CopyBinaryError('data after the trailer');
      }
    }
    this.position += end;
    return this.tuples - before;
  }

  /** Reads the tuples that lie whole in `chunk` from `at`; returns where the first that does not starts. */
  private wholeTuples(chunk: Buffer, at: number): number {
    const end = chunk.length;
    while (at + 2 <= end) {
      const fields = chunk.readInt16BE(at);
      if (fields < 0) return at; // the trailer, or an error: the phases tell
      let p = at + 2;
      let f = 0;
      for (; f < fields && p + 4 <= end; f++) {
        const length = chunk.readInt32BE(p);
        if (length < -1) return at;
        p += length > 0 ? 4 + length : 4;
      }
      if (f < fields || p > end) return at;
      if (this.firstStart === undefined) this.started(at);
      this.tuples++;
      at = p;
    }
    return at;
  }

  private started(at: number): void {
    this.firstStart ??= { index: this.tuples, position: this.position + at };
  }

  private fieldDone(): void {
    if (--this.fieldsLeft > 0) {
      this.phase = Phase.Length;
      return;
    }
    this.tuples++;
    this.phase = Phase.Count;
  }

  // Set by gather: where in the chunk reading goes on, and where in the returned buffer the part is.
  private consumedTo = 0;
  private partAt = 0;

  /**
   * The `size` bytes of a fixed-size part from `at` in `chunk`, or from what earlier chunks left
   * plus this one; undefined when the chunk ends first (what it had is kept).
   */
  private gather(chunk: Buffer, at: number, size: number): Buffer | undefined {
    if (this.have === 0 && chunk.length - at >= size) {
      this.consumedTo = at + size;
      this.partAt = at;
      return chunk;
    }
    const n = Math.min(size - this.have, chunk.length - at);
    chunk.copy(this.partial, this.have, at, at + n);
    this.have += n;
    if (this.have < size) return undefined;
    this.have = 0;
    this.consumedTo = at + n;
    this.partAt = 0;
    return this.partial;
  }
}

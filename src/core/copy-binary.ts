/**
 * PostgreSQL's binary COPY, as a snapshot carries it between two PostgreSQL databases whose columns
 * have the same types: in the protocol's CopyData messages, as the server sent them, so that they
 * go to the sink's server as they are (no payload copied out of its message and framed again).
 *
 * A CopyData message is the byte 'd', an int32 length counting itself, then its payload. The server
 * sends a tuple per message; the first also carries the header (an 11-byte signature, an int32 of
 * flags, an int32 length of a header extension, then that many bytes) and the last holds only the
 * trailer, an int16 -1. A tuple is an int16 count of fields and, per field, an int32 length (-1 for
 * NULL) and that many bytes. Integers are big-endian.
 */

/** Which format a snapshot partition's COPY stream is in: text rows, or binary in CopyData messages. */
export type CopyFormat = 'text' | 'binary';

export const COPY_BINARY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const HEADER_BYTES = COPY_BINARY_SIGNATURE.length + 8;
// Flag bit 16: every tuple carries its OID, which no COPY of a query does.
const FLAG_OIDS = 1 << 16;
export const COPY_DATA = 0x64; // 'd'
export const MESSAGE_HEADER_BYTES = 5;

/** A binary COPY stream that does not follow the format. */
export class CopyBinaryError extends Error {
  constructor(message: string) {
    super(`binary COPY: ${message}`);
    this.name = 'CopyBinaryError';
  }
}

/** Where a message's payload lies in its chunk. */
export interface MessageBounds {
  payload: number;
  end: number;
}

/**
 * Follows a binary COPY fed in chunks of whole CopyData messages, counting its tuples: a message is
 * a tuple unless it is the trailer. Only message headers are read, not the fields.
 */
export class CopyBinaryMessages {
  /** Tuples read so far. */
  tuples = 0;
  /** Messages read so far. */
  messages = 0;
  /** Whether the trailer was read: the stream is complete. */
  ended = false;

  /** Reads the next chunk; returns the tuples it held. */
  feed(chunk: Buffer): number {
    const before = this.tuples;
    for (let at = 0; at < chunk.length; ) {
      if (this.ended) throw new CopyBinaryError('data after the trailer');
      const { payload, end } = messageAt(chunk, at);
      const tuple = this.messages === 0 ? payload + headerBytes(chunk, payload, end) : payload;
      if (end - tuple === 2 && chunk.readInt16BE(tuple) === -1) this.ended = true;
      else this.tuples++;
      this.messages++;
      at = end;
    }
    return this.tuples - before;
  }
}

/** The CopyData message at `at` of a chunk of whole messages. */
export function messageAt(chunk: Buffer, at: number): MessageBounds {
  if (chunk.length - at < MESSAGE_HEADER_BYTES || chunk[at] !== COPY_DATA) {
    throw new CopyBinaryError('a chunk that is not whole CopyData messages');
  }
  const length = chunk.readUInt32BE(at + 1);
  const end = at + 1 + length;
  if (length < 4 || end > chunk.length) throw new CopyBinaryError('a CopyData message cut short');
  return { payload: at + MESSAGE_HEADER_BYTES, end };
}

/** The length of the header at the start of the first message's payload (checked). */
export function headerBytes(chunk: Buffer, from: number, end: number): number {
  const signature = chunk.subarray(from, from + COPY_BINARY_SIGNATURE.length);
  if (end - from < HEADER_BYTES || !signature.equals(COPY_BINARY_SIGNATURE)) {
    throw new CopyBinaryError('the stream does not start with the binary COPY signature');
  }
  const flags = chunk.readUInt32BE(from + COPY_BINARY_SIGNATURE.length);
  if (flags & FLAG_OIDS) throw new CopyBinaryError('tuples with OIDs are not supported');
  const bytes = HEADER_BYTES + chunk.readUInt32BE(from + COPY_BINARY_SIGNATURE.length + 4);
  if (end - from < bytes) throw new CopyBinaryError('a header extension longer than its message');
  return bytes;
}

/** The fields of the tuple that fills `payload` to `end` exactly, or undefined when it does not. */
export function tupleFields(chunk: Buffer, payload: number, end: number): (Buffer | null)[] | undefined {
  if (end - payload < 2) return undefined;
  const count = chunk.readInt16BE(payload);
  if (count < 0) return undefined;
  const fields: (Buffer | null)[] = [];
  let at = payload + 2;
  for (let f = 0; f < count; f++) {
    if (at + 4 > end) return undefined;
    const length = chunk.readInt32BE(at);
    at += 4;
    if (length < 0) {
      fields.push(null);
      continue;
    }
    if (at + length > end) return undefined;
    fields.push(chunk.subarray(at, at + length));
    at += length;
  }
  return at === end ? fields : undefined;
}

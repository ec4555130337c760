import { COPY_DATA, MESSAGE_HEADER_BYTES as HEADER } from '../../core/copy-binary.js';

/** What one chunk of the server's messages held while a COPY TO STDOUT runs. */
export interface CopyDataRead {
  /** What it held of the copy's data, in order (nothing, when it held none). */
  data: Buffer[];
  /**
   * The copy's data is over (CopyDone read), or the server sent an ErrorResponse or a message no
   * copy sends: `rest` is then what the connection's own parser reads from here on.
   */
  over: boolean;
  rest: Buffer;
}

export const COPY_DONE = 0x63; // 'c'
// Messages the protocol lets the server send in the middle of a copy, and the copy's announcement.
export const INTERSPERSED = new Set([
  0x48, // CopyOutResponse 'H'
  0x4e, // NoticeResponse 'N'
  0x53, // ParameterStatus 'S'
  0x41, // NotificationResponse 'A'
]);

/**
 * Takes the rows out of the server's messages during a COPY TO STDOUT, chunk by chunk as the
 * socket delivers them, cut anywhere: each row comes in a CopyData message of its own, and the
 * rows of a chunk are copied once into one buffer (no object per row).
 */
export class CopyDataReader {
  // A message header or a whole non-data message cut by the previous chunk's end.
  private pending: Buffer | undefined;
  // Bytes of a CopyData payload cut by the previous chunk's end, still to come.
  private payloadLeft = 0;

  read(input: Buffer): CopyDataRead {
    const chunk = this.pending ? Buffer.concat([this.pending, input]) : input;
    this.pending = undefined;
    const out = Buffer.allocUnsafe(chunk.length);
    let written = 0;
    let at = 0;
    if (this.payloadLeft > 0) {
      const n = Math.min(this.payloadLeft, chunk.length);
      written += chunk.copy(out, 0, 0, n);
      this.payloadLeft -= n;
      at = n;
    }
    let over = false;
    while (at < chunk.length) {
      if (chunk.length - at < HEADER) {
        this.pending = chunk.subarray(at);
        at = chunk.length;
        break;
      }
      const code = chunk[at] as number;
      const end = at + 1 + chunk.readUInt32BE(at + 1);
      if (code === COPY_DATA) {
        written += chunk.copy(out, written, at + HEADER, Math.min(end, chunk.length));
        this.payloadLeft = Math.max(0, end - chunk.length);
        at = Math.min(end, chunk.length);
      } else if (INTERSPERSED.has(code)) {
        if (end > chunk.length) {
          this.pending = chunk.subarray(at);
          at = chunk.length;
          break;
        }
        at = end;
      } else {
        // CopyDone is the copy's: read here. An error, or anything else, is the connection's.
        if (code === COPY_DONE) at = end;
        over = true;
        break;
      }
    }
    return { data: written > 0 ? [out.subarray(0, written)] : [], over, rest: chunk.subarray(at) };
  }
}

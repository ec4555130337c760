/**
 * Splits a byte stream of the PostgreSQL wire protocol (backend messages: a type byte, then a
 * 32-bit length that counts itself, then the body) into whole messages, across reads of any size.
 * A message split over reads is gathered into one buffer of its size, so a large message costs one
 * copy, not one per read.
 */
export class MessageFramer {
  /** The first bytes of a message whose header (type and length) has not all arrived. */
  private header: Buffer | null = null;
  /** A message begun in an earlier read, and how much of it is there. */
  private partial: Buffer | null = null;
  private filled = 0;

  /**
   * @param onMessage called with each whole message: its type, and `buffer` holding its body from
   *   `start` to `end`. The buffer is not reused: a view of it may be kept.
   */
  constructor(
    private readonly onMessage: (type: number, buffer: Buffer, start: number, end: number) => void,
  ) {}

  /** Takes in one read. */
  push(read: Buffer): void {
    let chunk = read;
    if (this.header) {
      chunk = Buffer.concat([this.header, chunk]);
      this.header = null;
    }
    let at = 0;
    if (this.partial) {
      const take = Math.min(this.partial.length - this.filled, chunk.length);
      chunk.copy(this.partial, this.filled, 0, take);
      this.filled += take;
      at = take;
      if (this.filled < this.partial.length) return;
      const whole = this.partial;
      this.partial = null;
      this.onMessage(whole[0] as number, whole, 5, whole.length);
    }
    while (at < chunk.length) {
      if (chunk.length - at < 5) {
        this.header = chunk.subarray(at);
        return;
      }
      const size = 1 + chunk.readUInt32BE(at + 1);
      if (size < 5) throw new Error(`malformed protocol message: length ${size - 1}`);
      if (chunk.length - at < size) {
        this.partial = Buffer.allocUnsafe(size);
        this.filled = chunk.copy(this.partial, 0, at);
        return;
      }
      this.onMessage(chunk[at] as number, chunk, at + 5, at + size);
      at += size;
    }
  }
}

import { COPY_DATA, MESSAGE_HEADER_BYTES } from '../../core/copy-binary.js';
import { COPY_DONE, type CopyDataRead, INTERSPERSED } from './copy-data-reader.js';

const NOTHING = Buffer.alloc(0);

/**
 * Takes the CopyData messages of a COPY TO STDOUT out of the server's messages as they are, framing
 * included, for a sink whose server takes them as they are (binary COPY into PostgreSQL): each
 * piece it gives is whole messages, mostly a view of the socket's chunk, so no row is copied. A
 * message cut by a chunk's end is kept until it is whole; other messages in the copy are dropped.
 */
export class CopyDataMessages {
  // A message cut by the previous chunk's end: its bytes so far, and its size once its header is in.
  private cut: Buffer[] = [];
  private cutBytes = 0;
  private cutSize = 0;

  read(input: Buffer): CopyDataRead {
    const data: Buffer[] = [];
    let chunk = input;
    if (this.cutBytes > 0) {
      if (this.cutSize === 0) {
        // Its header was cut: rare, and the header is a few bytes.
        chunk = Buffer.concat([...this.cut, input]);
        this.keep(NOTHING, 0);
      } else {
        const wanted = this.cutSize - this.cutBytes;
        if (input.length < wanted) {
          this.cut.push(input);
          this.cutBytes += input.length;
          return { data, over: false, rest: NOTHING };
        }
        const whole = Buffer.concat([...this.cut, input.subarray(0, wanted)], this.cutSize);
        if (whole[0] === COPY_DATA) data.push(whole);
        this.keep(NOTHING, 0);
        chunk = input.subarray(wanted);
      }
    }
    let at = 0;
    let run = 0;
    const endRun = (to: number) => {
      if (to > run) data.push(chunk.subarray(run, to));
    };
    while (at < chunk.length) {
      if (chunk.length - at < MESSAGE_HEADER_BYTES) {
        endRun(at);
        this.keep(chunk.subarray(at), 0);
        return { data, over: false, rest: NOTHING };
      }
      const code = chunk[at] as number;
      const end = at + 1 + chunk.readUInt32BE(at + 1);
      if (code !== COPY_DATA && !INTERSPERSED.has(code)) {
        // CopyDone is the copy's: read here. An error, or anything else, is the connection's.
        endRun(at);
        return { data, over: true, rest: chunk.subarray(code === COPY_DONE ? end : at) };
      }
      if (end > chunk.length) {
        endRun(at);
        this.keep(chunk.subarray(at), end - at);
        return { data, over: false, rest: NOTHING };
      }
      if (code !== COPY_DATA) {
        endRun(at);
        run = end;
      }
      at = end;
    }
    endRun(at);
    return { data, over: false, rest: NOTHING };
  }

  private keep(part: Buffer, size: number): void {
    this.cut = part.length > 0 ? [part] : [];
    this.cutBytes = part.length;
    this.cutSize = size;
  }
}

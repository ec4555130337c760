import { Transform, type TransformCallback } from 'node:stream';
import { CopyBinaryError, CopyBinaryMessages, type CopyFormat } from '../../core/copy-binary.js';
import type { CopyPace } from './copy-pace.js';

/**
 * Passes a partition's COPY data through and counts its rows. In text format every row ends with
 * a newline byte, and newlines inside values are escaped as `\n`, so counting 0x0A bytes counts
 * rows; in binary format each CopyData message but the trailer is a tuple (CopyBinaryMessages), a
 * chunk that is not whole messages fails, and so does a stream that ends before the trailer: it was
 * cut short. With a pace, each chunk waits for its turn before it goes on.
 */
export class RowCounter extends Transform {
  rows = 0;
  private readonly binary: CopyBinaryMessages | undefined;

  constructor(
    format: CopyFormat,
    private readonly onRows: (added: number) => void,
    private readonly pace?: CopyPace,
  ) {
    super();
    this.binary = format === 'binary' ? new CopyBinaryMessages() : undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let added: number;
    try {
      added = this.binary ? this.binary.feed(chunk) : newlines(chunk);
    } catch (error) {
      callback(error as Error);
      return;
    }
    if (added > 0) {
      this.rows += added;
      this.onRows(added);
    }
    const turn = added > 0 ? this.pace?.turn(added) : undefined;
    if (turn) void turn.then(() => callback(null, chunk));
    else callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.binary && !this.binary.ended) {
      callback(new CopyBinaryError(`the stream ended after ${this.rows} tuples, without its trailer`));
      return;
    }
    callback();
  }
}

function newlines(chunk: Buffer): number {
  let count = 0;
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) count++;
  return count;
}

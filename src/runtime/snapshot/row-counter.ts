import { Transform, type TransformCallback } from 'node:stream';

/**
 * Passes COPY text-format data through and counts its rows: every row ends with a newline byte,
 * and newlines inside values are escaped as `\n`, so counting 0x0A bytes counts rows.
 */
export class RowCounter extends Transform {
  rows = 0;

  constructor(private readonly onRows: (added: number) => void) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let added = 0;
    let at = chunk.indexOf(10);
    while (at !== -1) {
      added++;
      at = chunk.indexOf(10, at + 1);
    }
    if (added > 0) {
      this.rows += added;
      this.onRows(added);
    }
    callback(null, chunk);
  }
}
